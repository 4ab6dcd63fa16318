"""One process per run directory: a second command on a run directory in use stops in one line
naming the holder, instead of both training and mixing their rows and checkpoints.

The lock is an flock on run_dir/run.lock, which the kernel drops when its holder ends however it
ends (Ctrl-C, a crash, SIGKILL), so a dead run never blocks a resume; the file keeps the
holder's pid, host and start time for the message, and a later run says whose lock it took
over. flock does not reach across machines on every network file system (NFS may not lock).
"""
import atexit
import datetime
import fcntl
import json
import os
import socket
import time

from common.system import file_writes

LOCK_FILE = 'run.lock'
_held = {}  # realpath of a run directory -> the open lock file of this process


class RunDirInUse(Exception):
    """Another live process holds the run directory; the message names it."""


def _describe(holder):
    return (f"pid {holder.get('pid', '?')} on {holder.get('host', '?')} since "
            f"{holder.get('started', '?')}")


def acquire(run_dir):
    """Takes run_dir's lock for the life of this process (again: a no-op); returns a line to
    print when it took over a lock left by a process that ended, else None. Raises RunDirInUse
    if a live process holds it."""
    key = os.path.realpath(run_dir)
    if key in _held:
        return None
    os.makedirs(run_dir, exist_ok=True)
    path = os.path.join(run_dir, LOCK_FILE)
    lock_file = open(path, 'a+')  # pylint: disable=consider-using-with  (held until exit)
    try:
        fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_holder(lock_file)
        lock_file.close()
        raise RunDirInUse(f'--run_dir={run_dir} is in use by {_describe(holder)}; wait for that '
                          'run to end (or stop it), or give another --run_dir') from None
    previous = _read(lock_file)
    _held[key] = lock_file
    lock_file.seek(0)
    lock_file.truncate()
    with file_writes.naming(path):
        json.dump({'pid': os.getpid(), 'host': socket.gethostname(),
                   'started': datetime.datetime.now().isoformat(timespec='seconds')}, lock_file)
        lock_file.flush()
    atexit.register(release, run_dir)  # a run that ends in Python leaves no holder behind
    if previous:
        return f'took over the lock of {run_dir} left by {_describe(previous)}, which has ended'
    return None


def live_holder(run_dir):
    """'pid N on HOST since T' of a live process holding run_dir's lock, None if none does (the
    directory has no lock file, or its holder has ended). Takes and drops a shared lock: it
    never blocks and leaves the file as it was."""
    if os.path.realpath(run_dir) in _held:
        return None  # this process holds it
    path = os.path.join(run_dir, LOCK_FILE)
    try:
        lock_file = open(path)  # pylint: disable=consider-using-with
    except OSError:
        return None
    with lock_file:
        try:
            fcntl.flock(lock_file, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _describe(_read(lock_file))
        fcntl.flock(lock_file, fcntl.LOCK_UN)
    return None


def release(run_dir):
    """Drops this process's lock on run_dir and clears the holder it names (a process that is
    killed drops the lock too, but leaves its name for the next run to report)."""
    lock_file = _held.pop(os.path.realpath(run_dir), None)
    if lock_file is not None:
        try:
            lock_file.seek(0)
            lock_file.truncate()
            lock_file.close()
        except OSError:  # a full or read-only disk: the kernel drops the lock at exit anyway
            pass


def _read_holder(lock_file, wait_seconds=1.0):
    """The live holder's record; a holder that has just taken the lock writes it a moment
    later (truncate, then write), so an empty record is read again for up to wait_seconds."""
    deadline = time.monotonic() + wait_seconds
    holder = _read(lock_file)
    while 'pid' not in holder and time.monotonic() < deadline:
        time.sleep(0.02)
        holder = _read(lock_file)
    return holder


def _read(lock_file):
    lock_file.seek(0)
    try:
        holder = json.loads(lock_file.read() or '{}')
    except ValueError:
        return {}
    return holder if isinstance(holder, dict) else {}
