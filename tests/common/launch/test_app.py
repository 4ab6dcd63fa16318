"""The gin entry helper: bad configs stop with one line naming the value; run dirs resume."""
import json
import os
import signal
import subprocess
import sys
import time

import gin
import pytest


from common.launch import app
from common.run import operative_config
from common.system import errors
from common.system import gin_text


@gin.configurable
def _toy(size=1, name='a'):
    return size, name


def test_a_gin_include_loop_or_too_deep_a_nest_is_one_line(tmp_path):
    (tmp_path / 'a.gin').write_text(f"include '{tmp_path / 'b.gin'}'\n")
    (tmp_path / 'b.gin').write_text(f"include '{tmp_path / 'c.gin'}'\n")
    (tmp_path / 'c.gin').write_text(f"include '{tmp_path / 'b.gin'}'\n")
    with pytest.raises(errors.ConfigError) as raised:
        app.parse_gin([str(tmp_path / 'a.gin')], [])
    assert str(raised.value) == (f'gin include loop: {tmp_path / "b.gin"} includes '
                                 f'{tmp_path / "c.gin"} includes {tmp_path / "b.gin"}')
    depth = gin_text.MAX_INCLUDE_DEPTH + 1
    for index in range(depth):
        (tmp_path / f'n{index}.gin').write_text(f"include '{tmp_path / f'n{index + 1}.gin'}'\n")
    (tmp_path / f'n{depth}.gin').write_text('')
    deeper = f'nest deeper than {gin_text.MAX_INCLUDE_DEPTH} files'
    with pytest.raises(errors.ConfigError, match=deeper):
        app.parse_gin([str(tmp_path / 'n0.gin')], [])
    # A nest within the limit, and the same file included twice side by side, parse.
    (tmp_path / 'shared.gin').write_text('')
    (tmp_path / 'twice.gin').write_text(f"include '{tmp_path / 'shared.gin'}'\n"
                                        f"include '{tmp_path / 'shared.gin'}'\n")
    app.parse_gin([str(tmp_path / f'n{depth - gin_text.MAX_INCLUDE_DEPTH + 1}.gin'),
                   str(tmp_path / 'twice.gin')], [])



def test_a_renamed_binding_in_an_included_file_is_named_with_its_file(tmp_path):
    """gin alone would only say it knows no such configurable; the file that binds it is named,
    however deep the include."""
    inner = tmp_path / 'inner.gin'
    inner.write_text('Old.x = 1\n')
    middle = tmp_path / 'middle.gin'
    middle.write_text(f"include '{inner}'\n")
    outer = tmp_path / 'outer.gin'
    outer.write_text(f"include '{middle}'\n")
    with pytest.raises(errors.ConfigError) as raised:
        app.parse_gin([str(outer)], [], renamed={'Old.x': 'bind New.x instead'})
    assert str(raised.value) == f'Old.x ({inner}) is not a binding: bind New.x instead'
    with pytest.raises(errors.ConfigError, match=r"Old.x \(--gin_bindings='Old.x = 2'\)"):
        app.parse_gin([], ['Old.x = 2'], renamed={'Old.x': 'bind New.x instead'})

def test_a_moved_binding_is_read_as_its_new_name_with_a_warning(tmp_path, capsys):
    """An old name keeps working, in a file, a file it includes and a binding; the warning
    names where it was; a run records the new name."""
    inner = tmp_path / 'inner.gin'
    inner.write_text('_toy.old_size = 3\n')
    outer = tmp_path / 'outer.gin'
    outer.write_text(f"include '{inner}'\n")
    moved = {'_toy.old_size': '_toy.size'}
    try:
        app.parse_gin([str(outer)], [], moved=moved)
        assert _toy() == (3, 'a')
        assert f'_toy.old_size ({inner}) is read as _toy.size' in capsys.readouterr().err
        app.parse_gin([], ['_toy.old_size = 4'], moved=moved)
        assert _toy() == (4, 'a')
        assert '_toy.size = 4' in gin.operative_config_str()
    finally:
        gin.clear_config()
    with pytest.raises(errors.ConfigError, match='old_size'):
        app.parse_gin([], ['_toy.old_size = 4'])


def test_missing_gin_file_names_the_path(tmp_path):
    missing = str(tmp_path / 'nope.gin')
    with pytest.raises(errors.ConfigError, match='nope.gin'):
        app.parse_gin([missing], [])


@pytest.mark.parametrize('binding, fragment', [
    ('_toy.sise = 3', 'sise'),                # unknown parameter
    ('_unknown_thing.size = 3', '_unknown_thing'),  # unknown configurable
    ('_toy.size = ', 'parse'),                # malformed value
    ('_toy.size = [1,', '_toy.size'),         # unterminated
])
def test_bad_bindings_raise_one_line_config_errors(binding, fragment):
    with pytest.raises(errors.ConfigError) as error:
        app.parse_gin([], [binding])
    message = str(error.value)
    assert '\n' not in message
    assert fragment in message


def test_good_bindings_apply_and_parse_clears_previous_config():
    app.parse_gin([], ['_toy.size = 3'])
    assert _toy() == (3, 'a')
    app.parse_gin([], ["_toy.name = 'b'"])
    assert _toy() == (1, 'b')


def test_rerunning_the_same_invocation_reuses_its_run_dir(tmp_path):
    runs = str(tmp_path / 'runs')
    invocation = {'paper': 'paac', 'gin_files': ['x.gin'], 'gin_bindings': []}
    first = app.resolve_run_dir('paac', 'pong', None, invocation, runs_root=runs)
    app.prepare_run_dir(first, invocation)
    assert app.resolve_run_dir('paac', 'pong', None, invocation, runs_root=runs) == first
    other = dict(invocation, gin_bindings=['PAACConfig.t_max = 3'])
    assert app.resolve_run_dir('paac', 'pong', None, other, runs_root=runs) != first
    assert app.resolve_run_dir('paac', 'pong', 'explicit', other, runs_root=runs) == 'explicit'


def test_prepare_run_dir_keeps_the_first_invocation(tmp_path):
    run_dir = str(tmp_path / 'run')
    first = {'paper': 'paac', 'gin_files': [], 'gin_bindings': []}
    app.prepare_run_dir(run_dir, first)
    app.prepare_run_dir(run_dir, dict(first, gin_bindings=['x']))
    with open(os.path.join(run_dir, app.INVOCATION_FILE)) as f:
        assert json.load(f) == first
    assert any(name.startswith('invocation.resume-') for name in os.listdir(run_dir))


def test_operative_config_is_not_overwritten_by_a_different_config(tmp_path):
    app.parse_gin([], ['_toy.size = 3'])
    _toy()
    first = operative_config.write_operative_config(str(tmp_path))
    app.parse_gin([], ['_toy.size = 4'])
    _toy()
    second = operative_config.write_operative_config(str(tmp_path))
    assert first != second
    assert '_toy.size = 3' in open(first).read()
    assert '_toy.size = 4' in open(second).read()


# A main that, once stopped, takes a second to "save a checkpoint" and then writes it.
_SLOW_SAVE_MAIN = """
import os, time
from common.launch import app

def main():
    try:
        print('running', flush=True)
        time.sleep(60)
    except KeyboardInterrupt:
        time.sleep(1.0)
        with open(os.environ['SAVED_PATH'], 'w') as f:
            f.write('saved')
        raise

app.execute(main)
"""


def test_later_signals_cannot_cut_short_the_save_that_the_first_one_started(tmp_path):
    script = tmp_path / 'slow_save.py'
    script.write_text(_SLOW_SAVE_MAIN)
    saved = tmp_path / 'saved'
    process = subprocess.Popen(
        [sys.executable, str(script)], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT, SAVED_PATH=str(saved)))
    try:
        assert process.stdout.readline() == 'running\n'
        # Ctrl-C, then what `timeout` or an impatient user adds while the checkpoint is written.
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGINT):
            process.send_signal(signum)
            time.sleep(0.2)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130
    assert saved.read_text() == 'saved'
    assert 'SIGTERM ignored: already stopping' in stderr
    assert 'SIGINT ignored: already stopping' in stderr
    assert stderr.rstrip().endswith('interrupted')


class _Env:
    observation_shape = (84, 84, 4)
    game = 'pong'

    def num_actions(self):
        return 6


def _listing(directory):
    return {name: os.path.getmtime(os.path.join(directory, name))
            for name in sorted(os.listdir(directory))}


def test_a_run_directory_remembers_what_its_checkpoints_hold(tmp_path):
    run_dir = str(tmp_path / 'run')
    identity = app.run_identity('paac', _Env(), network='nips')
    assert identity == {'paper': 'paac', 'env': 'pong', 'observation_shape': [84, 84, 4],
                        'num_actions': 6, 'network': 'nips'}
    app.check_run_dir(run_dir, identity)  # a new directory is fine
    app.prepare_run_dir(run_dir, {'paper': 'paac'}, identity)
    app.check_run_dir(run_dir, identity)  # so is a rerun of the same
    before = _listing(run_dir)
    other = dict(identity, env='breakout', num_actions=4)
    with pytest.raises(errors.ConfigError) as raised:
        app.check_run_dir(run_dir, other)
    message = str(raised.value)
    assert "env: 'pong' there, 'breakout' here" in message
    assert 'num_actions: 6 there, 4 here' in message and '\n' not in message
    with pytest.raises(errors.ConfigError, match="paper: 'paac' there, 'dqn' here"):
        app.check_run_dir(run_dir, dict(identity, paper='dqn'))
    assert _listing(run_dir) == before


def test_a_run_dir_that_is_a_file_or_holds_damaged_records_is_named(tmp_path):
    identity = app.run_identity('paac', _Env(), network='nips')
    a_file = tmp_path / 'notes.txt'
    a_file.write_text('mine')
    with pytest.raises(errors.ConfigError, match='is a file, not a directory'):
        app.check_run_dir(str(a_file), identity)
    assert a_file.read_text() == 'mine'
    damaged = tmp_path / 'damaged'
    damaged.mkdir()
    (damaged / app.INVOCATION_FILE).write_text('{"paper": "paac"')
    with pytest.raises(errors.ConfigError, match='invocation.json is not readable JSON'):
        app.check_run_dir(str(damaged), identity)


def test_a_run_dir_whose_checkpoints_are_all_damaged_is_refused_untouched(tmp_path):
    import numpy as np
    import tensorflow as tf
    from common.run import checkpoint
    run_dir = str(tmp_path / 'run')
    saver = checkpoint.Checkpointer(run_dir, weights=tf.Variable(np.ones(500, np.float32)))
    saver.save(10)
    directory = os.path.join(run_dir, 'checkpoints')
    data = next(name for name in os.listdir(directory) if '.data-' in name)
    with open(os.path.join(directory, data), 'r+b') as f:
        f.truncate(5)
    before = _listing(directory)
    with pytest.raises(errors.ConfigError, match='no readable checkpoint in .*checkpoints'):
        app.check_run_dir(run_dir, app.run_identity('paac', _Env(), network='nips'))
    assert _listing(directory) == before and not os.path.exists(
        os.path.join(run_dir, app.INVOCATION_FILE))


def test_a_recorded_config_of_an_older_version_still_parses(tmp_path):
    """Evaluating an old run: bindings that no longer exist are left out, the rest binds."""
    (tmp_path / app.OPERATIVE_CONFIG_FILE).write_text(
        '_toy.size = 7\n'
        '_toy.old_switch = True\n'
        'RMSProp.epsilon_inside_sqrt = True\n'
        "RMSProp.name = 'rmsprop'\n")
    with pytest.raises(errors.ConfigError, match='old_switch'):
        app.parse_recorded_config(str(tmp_path))
    app.parse_recorded_config(str(tmp_path), obsolete=('_toy.old_switch',))
    assert _toy() == (7, 'a')
    with pytest.raises(errors.ConfigError, match='has no operative_config.gin'):
        app.parse_recorded_config(str(tmp_path / 'nowhere'))


# Ctrl-C landing in a C extension's callback (TensorFlow converting a numpy array) surfaces as
# a SystemError caused by the KeyboardInterrupt.
_INTERRUPTED_IN_C_MAIN = """
from common.launch import app

def main():
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as interrupt:
        raise SystemError('__array__ returned a result with an exception set') from interrupt

app.execute(main)
"""


def _assert_a_clean_ctrl_c_exit(script, source):
    """Runs source as script: the exit of a Ctrl-C (130) and 'interrupted' alone on stderr."""
    script.write_text(source)
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT), timeout=60)
    assert result.returncode == 130, result.stderr[-2000:]
    assert result.stderr.strip() == 'interrupted'


def test_an_interrupt_surfacing_as_a_systemerror_is_still_a_clean_ctrl_c_exit(tmp_path):
    _assert_a_clean_ctrl_c_exit(tmp_path / 'interrupted_in_c.py', _INTERRUPTED_IN_C_MAIN)


# Ctrl-C landing while TensorFlow binds a tf.function's numpy input: TensorFlow raises a
# TypeError `from None`, so no KeyboardInterrupt is left in the chain (CI, 2026-12-06).
_INTERRUPTED_IN_TF_BINDING = """
import os, signal
from common.launch import app

def main():
    interrupted = False
    try:
        os.kill(os.getpid(), signal.SIGINT)
        signal.pause()  # the handler runs here, in case the signal is not delivered at once
    except KeyboardInterrupt:
        interrupted = True
    if interrupted:  # outside the handler: nothing in this error's chain
        raise TypeError('Binding inputs to tf.function failed')

app.execute(main)
"""


def test_an_interrupt_tensorflow_cut_from_its_chain_is_still_a_clean_ctrl_c_exit(tmp_path):
    _assert_a_clean_ctrl_c_exit(tmp_path / 'interrupted_in_tf.py', _INTERRUPTED_IN_TF_BINDING)


_RECORDED_STOOKE = """# Parameters for AtariConfig:
# ==============================================================================
AtariConfig.game = 'pong'
AtariConfig.repeat_action_probability = 0.0
AtariConfig.screen_size = [84, 84]
AtariConfig.variant = 'stooke'
"""


def test_a_resume_that_would_change_the_frames_is_refused_unless_bound(tmp_path):
    """A run recorded before AtariConfig.downsample existed ran with its default ('skip'); a
    preset that now binds 'average' would change its frames on resume: refused, in one line,
    before anything is written, unless the command binds the field (either value)."""
    from common.envs.atari import AtariConfig
    run_dir = str(tmp_path / 'run')
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, app.OPERATIVE_CONFIG_FILE), 'w') as f:
        f.write(_RECORDED_STOOKE)
    before = _listing(run_dir)
    now = AtariConfig(variant='stooke', downsample='average')
    with pytest.raises(errors.ConfigError) as raised:
        operative_config.check_env_unchanged(run_dir, now, [])
    message = str(raised.value)
    assert ("AtariConfig.downsample = 'skip' (absent from its config: the default), now "
            "'average'") in message and '\n' not in message
    assert 'screen_size' not in message  # a gin list is the tuple it builds
    assert _listing(run_dir) == before
    operative_config.check_env_unchanged(run_dir, now, ["AtariConfig.downsample = 'average'"])
    operative_config.check_env_unchanged(run_dir, AtariConfig(variant='stooke'),
                            ["common.envs.atari.AtariConfig.downsample = 'skip'"])
    operative_config.check_env_unchanged(run_dir, AtariConfig(variant='stooke'), [])  # as it ran
    operative_config.check_env_unchanged(str(tmp_path / 'new'), now, [])  # nothing ran there yet
    from common.envs.gym import GymConfig
    operative_config.check_env_unchanged(run_dir, GymConfig(), [])  # no GymConfig recorded: nothing to compare


def test_a_resume_compares_the_environment_with_its_newest_session(tmp_path):
    """Sticky actions recorded as 0.0, now 0.25 from a changed preset: refused; once a session
    ran with 0.25 (an operative_config.resume-*.gin), resuming with 0.25 is what it ran with."""
    from common.envs.atari import AtariConfig
    run_dir = str(tmp_path / 'run')
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, app.OPERATIVE_CONFIG_FILE), 'w') as f:
        f.write(_RECORDED_STOOKE + "AtariConfig.downsample = 'skip'\n")
    sticky = AtariConfig(variant='stooke', repeat_action_probability=0.25)
    with pytest.raises(errors.ConfigError,
                       match=r'AtariConfig.repeat_action_probability = 0.0, now 0.25'):
        operative_config.check_env_unchanged(run_dir, sticky, [])
    with open(os.path.join(run_dir, 'operative_config.resume-20261127-000000.gin'), 'w') as f:
        f.write(_RECORDED_STOOKE.replace('0.0', '0.25') + "AtariConfig.downsample = 'skip'\n")
    operative_config.check_env_unchanged(run_dir, sticky, [])
    with pytest.raises(errors.ConfigError, match=r'probability = 0.25, now 0.0'):
        operative_config.check_env_unchanged(run_dir, AtariConfig(variant='stooke'), [])
