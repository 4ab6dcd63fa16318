"""Every entry point stops bad input with one line, exit 2, before anything starts.

The table is built from the code, not written out: every `<paper>_tf/main.py` with a
`configure` and its `gin/<paper>/pong.gin`, every field of its config and of AtariConfig, and a
value of the wrong type for each, so a new entry point or field cannot skip the check.
"""
import dataclasses
import glob
import importlib
import os
import subprocess
import sys
import typing

import pytest

from common.envs import atari
from common.launch import app
from common.run import errors

ROOT = app.PROJECT_ROOT
PAPERS = sorted(os.path.basename(os.path.dirname(path))[:-len('_tf')]
                for path in glob.glob(os.path.join(ROOT, '*_tf', 'main.py')))


def _configure(paper):
    return importlib.import_module(f'{paper}_tf.main').configure


def _preset(paper):
    return os.path.join(ROOT, 'gin', paper, 'pong.gin')


def _wrong_value(annotation):
    """A gin literal of the wrong type for a field annotated so, or None to skip the field."""
    options = set(typing.get_args(annotation)) or {annotation}
    options.discard(type(None))
    if options & {int, float}:
        return "'fast'"
    if options == {bool}:
        return "'yes'"
    if options == {str}:
        return '3'
    if options & {dict, tuple}:
        return '3'
    return None  # Any: the value's own check decides (env_config)


def _bad_bindings():
    cases = []
    for paper in PAPERS:
        config = _configure(paper)([_preset(paper)], [])
        for owner, instance in ((type(config).__name__, config),
                                ('AtariConfig', config.env_config)):
            hints = typing.get_type_hints(type(instance))
            for field in dataclasses.fields(instance):
                value = _wrong_value(hints[field.name])
                name = f'{owner}.{field.name}'
                if value is not None:
                    cases.append((paper, f'{name} = {value}', name))
    return cases


def test_every_paper_has_an_entry_point_and_a_pong_preset():
    assert {'paac', 'dqn', 'ga3c'} <= set(PAPERS)
    for paper in PAPERS:
        assert os.path.isfile(_preset(paper)), paper
        assert isinstance(_configure(paper)([_preset(paper)], []).env_config, atari.AtariConfig)


BAD_BINDINGS = _bad_bindings()


@pytest.mark.parametrize('paper, binding, named', BAD_BINDINGS,
                         ids=[f'{paper}:{binding}' for paper, binding, _ in BAD_BINDINGS])
def test_a_value_of_the_wrong_type_is_named(paper, binding, named):
    with pytest.raises(errors.ConfigError) as raised:
        _configure(paper)([_preset(paper)], [binding])
    message = str(raised.value)
    assert named in message and 'must be' in message and '\n' not in message


def _run(module, args, cwd):
    return subprocess.run([sys.executable, '-m', module] + args, cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=ROOT))


def _one_error_line(result):
    lines = [line for line in result.stderr.splitlines() if line.startswith('error:')]
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    # Nothing else: no traceback, and no log line (e.g. gin's 'Path not found' for an include
    # tried relative to a working directory outside the repository).
    assert result.stderr.strip().splitlines() == lines, result.stderr[-2000:]
    return lines[0]


@pytest.mark.parametrize('paper', PAPERS)
def test_entry_points_name_a_string_where_a_number_belongs_and_a_file_as_run_dir(paper,
                                                                                 tmp_path):
    config = _configure(paper)([_preset(paper)], [])
    owner = type(config).__name__
    line = _one_error_line(_run(f'{paper}_tf.main', [
        f'--gin_file={_preset(paper)}', f"--gin_bindings={owner}.gamma = '0.99'",
        '--run_dir=run'], tmp_path))
    assert f"{owner}.gamma='0.99' must be a number" in line
    assert not (tmp_path / 'run').exists()
    (tmp_path / 'notes.txt').write_text('mine')
    line = _one_error_line(_run(f'{paper}_tf.main', [
        f'--gin_file={_preset(paper)}', '--run_dir=notes.txt'], tmp_path))
    assert 'is a file, not a directory' in line
    assert (tmp_path / 'notes.txt').read_text() == 'mine'


@pytest.mark.parametrize('module, args, named', [
    ('common.evaluate', ['--run_dir=.', '--num_episodes=x'], '--num_episodes=x'),
    ('common.evaluate', ['--run_dir=.', '--num_episodes=0'], '--num_episodes must be > 0'),
    ('common.evaluate', ['--run_dir=nowhere'], 'not a run directory'),
    ('common.watch', ['--run_dir=nowhere'], 'not a run directory'),
    ('common.compare', ['--plot'], 'flag --plot'),
    ('common.bench', ['--seconds=fast'], '--seconds=fast'),
    ('common.bench', ['--rows=env/nope'], 'unknown --rows'),
    ('dqn_tf.speedtest', ['--steps=abc'], '--steps=abc'),
    ('dqn_tf.reproduce', ['--steps=12'], '--steps=12; must be a positive multiple of 8'),
    ('dqn_tf.reproduce', ['--trials=1'], '--trials=1; must be >= 2'),
    ('dqn_tf.reproduce', ['--sampler_envs=gpu'], '--sampler_envs=gpu; allowed: thread, process'),
    ('dqn_tf.reproduce', ['--compute_dtypes=float32,float16'],
     '--compute_dtypes=float32,float16; allowed: a list without repeats of float32, bfloat16'),
    ('dqn_tf.reproduce', ['--compute_dtypes=bfloat16,bfloat16'], '--compute_dtypes=bfloat16,'),
    ('paac_tf.reproduce', ['--seconds=0'], '--seconds=0.0; must be > 0'),
    ('paac_tf.reproduce', ['--trials=1'], '--trials=1; must be >= 2'),
    ('ga3c_tf.reproduce', ['--anneal_seconds=0'], '--anneal_seconds=0.0; must be > 0'),
    ('common.suite', ['--games=pong', '--steps=abc'], '--steps=abc'),
    ('common.suite', ['--games=pong', '--steps=5'], '--gin_file is required'),
    ('common.suite', ['--gin_file=gin/paac/pong.gin', '--steps=5'], '--games is required'),
])
def test_tools_name_a_bad_flag_in_one_line(module, args, named, tmp_path):
    assert named in _one_error_line(_run(module, args, tmp_path))


@pytest.mark.parametrize('paper', PAPERS)
def test_a_resume_with_another_model_shape_is_refused_in_one_line(paper, tmp_path):
    """Every paper's PAPER.model_identity goes into run.json; a command whose network differs
    from the run's is refused, naming the difference, before anything is written."""
    module = importlib.import_module(f'{paper}_tf.main')
    config = module.configure([_preset(paper)], [])
    identity = app.run_identity(paper, config.env_config, **module.PAPER.model_identity(config))
    assert identity['network'] == config.network
    app.prepare_run_dir(str(tmp_path), {'paper': paper}, identity)
    app.check_run_dir(str(tmp_path), identity)  # the same shape resumes
    other = 'mlp' if config.network != 'mlp' else 'nature'
    changed = app.run_identity(paper, config.env_config, **module.PAPER.model_identity(
        dataclasses.replace(config, network=other)))
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(errors.ConfigError) as refused:
        app.check_run_dir(str(tmp_path), changed)
    assert f"network: '{config.network}' there, '{other}' here" in str(refused.value)
    assert '\n' not in str(refused.value) and sorted(os.listdir(tmp_path)) == before
