"""Does a run's recorded command still configure what the run trained with? Parses the
invocation's gin files and bindings (or the preset a published run names, PRESET_FILE) with
today's code and compares the bindings that gives with the run's operative_config.gin, so a
published curve is not passed off as today's preset."""
import ast
import dataclasses
import json
import os
import re

import gin

from common.envs import atari
from common.launch import app
from common.launch import registry
from common.system import errors
from common.system import gin_text

# A published run's record of the repository preset that reproduces it with today's code:
# {"gin_files": [...under gin/], "gin_bindings": [the game, the seed], "started_as": the command}.
# Its own command when that is one; else a preset kept for it (gin/published/NAME.gin: the frames
# it computed then, a sweep's point, a file that was never in the repository), each saying why.
PRESET_FILE = 'preset.json'

# Options added after runs were made, each with the value that is what the code did before it
# existed (an option absent from an old operative config ran that way). By field name for the
# fields of the shared run config (common/launch/config.py), whatever paper's class holds them;
# a paper's own go in its main's ADDED, the same way. Each is the default of the commit that
# added it, which kept the earlier behaviour.
ADDED_FIELDS = {
    'compute_dtype': "'float32'",    # 0b243ac, 2026-11-29: bfloat16 torsos
    'overlap_learning': 'False',     # 75259fd, 2026-11-29
    'reuse_activations': 'False',    # 00dde42, 2026-11-29
    'seed_exact': 'False',           # 8f49b57, 2026-12-06
    'log_every_steps': '0',          # 8f49b57, 2026-12-06
}
ADDED = {
    'AtariConfig.resize': "'area'",       # 8a4ed33, 2026-11-26: INTER_AREA was the only resize
    'AtariConfig.downsample': "'skip'",   # 8253b9d, 2026-11-27: 'stooke' frames took every 2nd
    'AtariConfig.life_loss_restarts_stack': 'False',  # 2026-12-06: the stack went on
}


# Values a preset leaves to the machine, each with the values it resolves to (the run records
# which, run.json's sessions' 'resolved'): a run that ran with one of them is reproduced by the
# preset on a machine that resolves it so. compute_dtype 'auto' (2026-12-06) replaced
# gin/fast/pong.gin's 'bfloat16', which its runs had on CPUs with native bfloat16.
RESOLVED_BY_THE_MACHINE = {'compute_dtype': ("'auto'", ("'float32'", "'bfloat16'"))}


def _resolves_to(name, value, recorded):
    """Whether today's value of option name is one the machine resolves, to the run's value."""
    open_value, values = RESOLVED_BY_THE_MACHINE.get(name.rsplit('.', 1)[-1], (None, ()))
    return value == open_value and recorded in values


def _before_it_existed(name, entry, recorded):
    """The value an option absent from an old run's operative config (recorded: its bindings)
    ran with, or None if it is not known to have been added later."""
    added = {**ADDED, **getattr(entry, 'ADDED', {})}
    if name in added:
        return added[name]
    if name.startswith('AtariConfig.'):
        # What atari.py knows an old record did (its default is not that).
        before = atari.AtariConfig.value_before(name.split('.', 1)[1], _atari_fields(recorded))
        if before is not dataclasses.MISSING:
            return repr(before)
    return ADDED_FIELDS.get(name.rsplit('.', 1)[-1])


def _atari_fields(recorded):
    """{field: value} of the recorded AtariConfig bindings (text where not a literal)."""
    fields = {}
    for name, text in recorded.items():
        if name.startswith('AtariConfig.'):
            try:
                fields[name.split('.', 1)[1]] = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                fields[name.split('.', 1)[1]] = text
    return fields


def _inert_options(recorded):
    """The recorded Atari game's options that cannot change what its agent sees (atari.py's
    inert_fields), as gin names; none for other envs."""
    game = _atari_fields(recorded).get('game')
    if not isinstance(game, str):
        return set()
    return {f'AtariConfig.{name}' for name in atari.inert_fields(game)}


_GAME_OR_SEED = re.compile(r'^\s*(AtariConfig\.game|[A-Za-z_]\w*\.seed)\s*=')


def published_preset(run_dir):
    """(gin files, gin bindings) of the preset a run reproduces: its PRESET_FILE if it has one,
    else the command it was started with (invocation.json)."""
    path = os.path.join(run_dir, PRESET_FILE)
    if os.path.isfile(path):
        with open(path) as f:
            record = json.load(f)
        return record['gin_files'], record['gin_bindings']
    invocation = app.read_invocation(run_dir) or {}
    return invocation.get('gin_files', []), invocation.get('gin_bindings', [])


def preset_problems(gin_files, gin_bindings):
    """Why gin files plus bindings are not a repository preset bound only to a game and a seed
    (a file outside the repository's gin/ folder, another binding); [] if they are one."""
    gin_root = os.path.join(app.PROJECT_ROOT, 'gin') + os.sep
    problems = [f'{name} is not a preset under gin/' for name in gin_files
                if not os.path.realpath(_resolve(name)).startswith(gin_root)
                or not os.path.isfile(_resolve(name))]
    problems += [f'{binding!r} binds more than the game or the seed' for binding in gin_bindings
                 if not _GAME_OR_SEED.match(binding)]
    return problems + ([] if gin_files else ['no gin file'])


def preset_record(run_dir, preset_file=None):
    """(record, problems): the PRESET_FILE record naming the repository preset that reproduces
    run_dir (preset_file with the run's game and seed bindings, else the run's own command), or
    None and why that is no preset that reproduces the run."""
    invocation = app.read_invocation(run_dir) or {}
    bindings = invocation.get('gin_bindings', [])
    gin_files = invocation.get('gin_files', []) if preset_file is None else [preset_file]
    if preset_file is not None:
        bindings = [binding for binding in bindings if _GAME_OR_SEED.match(binding)]
    problems = preset_problems(gin_files, bindings)
    if problems:
        return None, problems
    gin_files = [os.path.relpath(os.path.realpath(_resolve(name)), app.PROJECT_ROOT)
                 for name in gin_files]
    problems = differences(run_dir, gin_files, bindings)
    if problems:
        return None, problems
    return {'gin_files': gin_files, 'gin_bindings': bindings,
            'started_as': {key: invocation.get(key, []) for key in ('gin_files', 'gin_bindings')}}, []


def write_preset(record, target):
    """Writes record (preset_record's) as target/PRESET_FILE; returns its path."""
    path = os.path.join(target, PRESET_FILE)
    with open(path, 'w') as f:
        json.dump(record, f, indent=2)
        f.write('\n')
    return path


def _resolve(path):
    """A recorded gin file path: as given, else under the repository (commands run there)."""
    return path if os.path.isfile(path) else os.path.join(app.PROJECT_ROOT, path)


def differences(run_dir, gin_files=None, gin_bindings=None):
    """Lines naming each binding today's code gives the recorded command (or gin_files and
    gin_bindings) that the run's operative config does not hold: another value, or absent
    where the option was not added since (_before_it_existed); [] if it reproduces."""
    invocation = app.read_invocation(run_dir) or {}
    if gin_files is None:
        gin_files, gin_bindings = invocation.get('gin_files', []), invocation.get('gin_bindings', [])
    path = os.path.join(run_dir, app.OPERATIVE_CONFIG_FILE)
    if not os.path.isfile(path):
        return [f'{run_dir} has no {app.OPERATIVE_CONFIG_FILE} to compare with']
    try:
        entry = registry.entry_point(invocation.get('paper', '?'))
        entry.configure([_resolve(name) for name in gin_files], gin_bindings)
    except errors.ConfigError as error:
        return [f'the recorded command no longer parses: {error}']
    # A paper's MOVED maps bindings it has renamed to their names today.
    moved = getattr(entry, 'MOVED', {})
    with open(path) as f:
        recorded = {moved.get(name, name): value
                    for name, value in gin_text.operative_bindings(f.read()).items()}
    today = gin_text.operative_bindings(gin.operative_config_str())
    gin.clear_config()
    lines = []
    inert = _inert_options(recorded)
    for name, value in sorted(today.items()):
        if name in inert:
            continue
        if name in recorded:
            if recorded[name] != value and not _resolves_to(name, value, recorded[name]):
                lines.append(f'{name} = {value} today, {recorded[name]} in the run')
            continue
        before = _before_it_existed(name, entry, recorded)
        if before is None:
            lines.append(f'{name} = {value} today, absent in the run')
        elif before != value and not _resolves_to(name, value, before):
            lines.append(f'{name} = {value} today; the run predates the option and ran as '
                         f'{before} does')
    return lines
