"""What made each session of a run, appended to run.json's 'sessions' at every start or resume:
the code (package version, git commit and whether the tree differed from it), the libraries
that decide the numbers, and the machine (CPU, cores), so a published curve says what ran it
and its clock can be read against the cores it had."""
import datetime
import importlib.metadata
import json
import os
import subprocess
import uuid

from common.system import machine_load

SESSIONS = 'sessions'
# In a session's record: the carried run it started from (common/run/carry.py's session_note).
CARRIED_FROM = 'carried_from'
LIBRARIES = ('tensorflow', 'tf-keras', 'numpy', 'ale-py', 'gymnasium', 'gin-config')


def _version(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git(root, *args):
    try:
        result = subprocess.run(['git', '-C', root] + list(args), capture_output=True,
                                text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def code_record(root):
    """The package version and, in a git checkout, the commit and whether tracked files
    differ from it (dirty)."""
    record = {'package_version': _version('fast-rl-tf')}
    commit = _git(root, 'rev-parse', 'HEAD')
    if commit:
        record['git_commit'] = commit
        record['git_dirty'] = bool(_git(root, 'status', '--porcelain', '--untracked-files=no'))
    return record


def session_record(root):
    """This session: a unique id (the first session's names the run, common/run/carry.py's
    same_run), when it started, its code, libraries and machine."""
    return {'id': uuid.uuid4().hex,
            'started': datetime.datetime.now().astimezone().isoformat(timespec='seconds'),
            'code': code_record(root),
            'libraries': {name: _version(name) for name in LIBRARIES},
            'machine': machine_load.machine_record()}


def identity_of(recorded):
    """run.json without its sessions: what the checkpoints depend on."""
    return {key: value for key, value in recorded.items() if key != SESSIONS}


def identity_differences(recorded, identity):
    """'key: X there, Y here' for each value of recorded's identity (run.json without sessions)
    that identity gives otherwise. A key the record lacks was added to the identity after that
    run began: its value then is not known, so only what the record holds is compared."""
    return [f'{key}: {value!r} there, {identity.get(key)!r} here'
            for key, value in sorted(identity_of(recorded).items()) if value != identity.get(key)]


def usable_cores(recorded):
    """Usable cores of the last session's machine, None if unrecorded."""
    try:
        return int(recorded[SESSIONS][-1]['machine']['usable_cores'])
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def last_session(run_dir):
    """The newest session record of run_dir's run.json; {} if there is none to read."""
    try:
        with open(os.path.join(run_dir, 'run.json')) as f:
            sessions = json.load(f)[SESSIONS]
        return dict(sessions[-1])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return {}
