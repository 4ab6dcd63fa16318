"""Every entry point stops bad input with one line, exit 2, before anything starts.

The table is built from the code, not written out: every `<paper>_tf/main.py` with a
`configure` and its `gin/<paper>/pong.gin`, every field of its config and of AtariConfig (and of
each of accel's config sections, on the preset of an algorithm that reads it), and a value of
the wrong type for each, so a new entry point or field cannot skip the check. Each paper's own
checks of its values (tests/<paper>_tf/) stop its command the same way: one table here, by
paper, as a missing gin file does.
"""
import dataclasses
import glob
import importlib
import os
import re
import shutil
import typing

import pytest

from accel_tf import algorithms as accel_algorithms
from accel_tf import config as accel_config
from common.envs import atari
from common.launch import app
from common.system import errors

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


def _wrong_section_value(annotation):
    """_wrong_value; for a field of any type (an evaluation protocol: a name or
    @EvalProtocol()), a number, which the field's own check must name."""
    value = _wrong_value(annotation)
    return '3' if value is None and annotation is typing.Any else value


SECTION_FIELDS = [(name, field.name,
                   _wrong_section_value(typing.get_type_hints(cls)[field.name]))
                  for name, cls in accel_config.SECTIONS.items()
                  for field in dataclasses.fields(cls)]


@pytest.mark.parametrize('section, field, value', SECTION_FIELDS,
                         ids=[f'{section}.{field}' for section, field, _ in SECTION_FIELDS])
def test_a_section_value_of_the_wrong_type_is_named(section, field, value):
    """On the preset of the first algorithm that reads the section (another would refuse the
    binding of a section it does not read)."""
    assert value is not None, 'a field type this test does not know'
    reader = accel_algorithms.reading(section)[0]
    with pytest.raises(errors.ConfigError) as raised:
        _configure('accel')([os.path.join(ROOT, 'gin', 'accel', f'{reader}_pong.gin')],
                            [f'{section}.{field} = {value}'])
    message = str(raised.value)
    assert f'{section}.{field}=' in message and 'must be' in message and '\n' not in message


def _one_error_line(result):
    lines = [line for line in result.stderr.splitlines() if line.startswith('error:')]
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    # Nothing else: no traceback, and no log line (e.g. gin's 'Path not found' for an include
    # tried relative to a working directory outside the repository).
    assert result.stderr.strip().splitlines() == lines, result.stderr[-2000:]
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize('paper', PAPERS)
def test_entry_points_name_a_string_where_a_number_belongs_and_a_file_as_run_dir(
        paper, tmp_path, entry_point):
    config = _configure(paper)([_preset(paper)], [])
    owner = type(config).__name__
    paper_main = entry_point(f'{paper}_tf.main', _preset(paper))
    line = _one_error_line(paper_main.run(paper_main.flags([f"{owner}.gamma = '0.99'"]) +
                                          ['--run_dir=run'], tmp_path, timeout=120))
    assert f"{owner}.gamma='0.99' must be a number" in line
    assert not (tmp_path / 'run').exists()
    (tmp_path / 'notes.txt').write_text('mine')
    line = _one_error_line(paper_main.run(paper_main.flags() + ['--run_dir=notes.txt'], tmp_path,
                                          timeout=120))
    assert 'is a file, not a directory' in line
    assert (tmp_path / 'notes.txt').read_text() == 'mine'


# Each paper's own checks of its values, through its command on a preset: {preset: {a binding
# (or a tuple of them): what the one line names}}. The checks themselves: tests/<paper>_tf/
# (GA3C's value checks: test_server.py).
BAD_COMMANDS = {
    'gin/paac/pong.gin': {
        'PAACConfig.num_envs = 0': 'num_envs',
        'PAACConfig.horizon = 0': 'horizon',
        "AtariConfig.game = 'pongg'": 'pongg',
        'PAACConfig.num_envz = 3': 'num_envz',
        'RMSProp.epsilon = 0.5': 'bind PAACConfig.rmsprop_epsilon instead',
        'PAACConfig.alternating_halves = True': "bind PAACConfig.sampler = 'alternating' instead",
        'PAACConfig.num_envs = ': 'PAACConfig.num_envs',
    },
    'gin/ga3c/pong.gin': {
        'GA3CConfig.prediction_batch_size = -2': 'prediction_batch_size',
        'GA3CConfig.num_agentz = 3': 'num_agentz',
        'GA3CConfig.rmsprop_initial_mean_square = -1.0': 'rmsprop_initial_mean_square must be >= 0',
        'RMSProp.initial_mean_square = 1.0': 'bind GA3CConfig.rmsprop_initial_mean_square instead',
    },
    'gin/accel/ppo_pong.gin': {
        ("AccelConfig.sampler = 'alternating'", 'AccelConfig.num_workers = 3'): 'even num_workers',
    },
}
BAD_COMMAND_CASES = [
    (gin_file, [bindings] if isinstance(bindings, str) else list(bindings), named)
    for gin_file, checks in BAD_COMMANDS.items() for bindings, named in checks.items()]


@pytest.mark.slow
@pytest.mark.parametrize('gin_file, bindings, named', BAD_COMMAND_CASES, ids=[
    f"{gin_file.split('/')[1]}:{'; '.join(bindings)}"
    for gin_file, bindings, _ in BAD_COMMAND_CASES])
def test_a_bad_binding_stops_the_command_in_one_line_before_anything_starts(
        gin_file, bindings, named, tmp_path, entry_point):
    paper_main = entry_point(f"{gin_file.split('/')[1]}_tf.main", gin_file)
    line = _one_error_line(paper_main.run(paper_main.flags(bindings) + ['--run_dir=run'],
                                          tmp_path))
    assert named in line
    assert not (tmp_path / 'run').exists()


@pytest.mark.slow
@pytest.mark.parametrize('paper', PAPERS)
def test_a_missing_gin_file_is_named(paper, tmp_path, entry_point):
    result = entry_point(f'{paper}_tf.main').run([f'--gin_file=gin/{paper}/nope.gin'], tmp_path)
    assert 'nope.gin' in _one_error_line(result)


@pytest.mark.slow
@pytest.mark.parametrize('module, args, named', [
    ('common.evaluate', ['--run_dir=.', '--num_episodes=x'], '--num_episodes=x'),
    ('common.evaluate', ['--run_dir=.', '--num_episodes=0'], '--num_episodes must be > 0'),
    ('common.evaluate', ['--run_dir=nowhere'], 'not a run directory'),
    ('common.watch', ['--run_dir=nowhere'], 'not a run directory'),
    ('common.compare', ['--plot'], 'flag --plot'),
    ('common.bench', ['--seconds=fast'], '--seconds=fast'),
    ('common.bench', ['--rows=env/nope'], 'unknown --rows'),
    ('common.bench', ['--warmup_seconds=-1'], '--warmup_seconds=-1.0 must be >= 0'),
    ('dqn_tf.speedtest', ['--steps=abc'], '--steps=abc'),
    ('dqn_tf.reproduce', ['--steps=12'], '--steps=12; must be a positive multiple of 8'),
    ('dqn_tf.reproduce', ['--trials=1'], '--trials=1; must be >= 2'),
    ('dqn_tf.reproduce', ['--actor_envs=gpu'], '--actor_envs=gpu; allowed: thread, process'),
    ('dqn_tf.reproduce', ['--compute_dtypes=float32,float16'],
     '--compute_dtypes=float32,float16; allowed: a list without repeats of float32, bfloat16'),
    ('dqn_tf.reproduce', ['--compute_dtypes=bfloat16,bfloat16'], '--compute_dtypes=bfloat16,'),
    ('paac_tf.reproduce', ['--seconds=0'], '--seconds=0.0; must be > 0'),
    ('paac_tf.reproduce', ['--trials=1'], '--trials=1; must be >= 2'),
    ('ga3c_tf.reproduce', ['--anneal_seconds=0'], '--anneal_seconds=0.0; must be > 0'),
    ('ga3c_tf.reproduce', ['--warmup_seconds=-1'], '--warmup_seconds=-1.0; must be >= 0'),
    ('common.suite', ['--games=pong', '--steps=abc'], '--steps=abc'),
    ('common.suite', ['--games=pong', '--steps=5'], '--gin_file is required'),
    ('common.suite', ['--gin_file=gin/paac/pong.gin', '--steps=5'], '--games is required'),
])
def test_tools_name_a_bad_flag_in_one_line(module, args, named, tmp_path, entry_point):
    assert named in _one_error_line(entry_point(module).run(args, tmp_path, timeout=120))


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


def _files(folder):
    return {str(path.relative_to(folder)): path.read_bytes()
            for path in sorted(folder.rglob('*')) if path.is_file()}


@pytest.mark.slow
def test_training_into_a_published_run_is_refused_and_writes_nothing(tmp_path, entry_point):
    """The command a user types to go on training a published agent: before, it started over
    from step 0 in the published folder and set its 7,287 episodes aside."""
    published = tmp_path / 'paac-pong'
    shutil.copytree(os.path.join(ROOT, 'docs', 'results', 'paac-pong'), published)
    before = _files(published)
    paper_main = entry_point('paac_tf.main', _preset('paac'))
    line = _one_error_line(paper_main.run(
        paper_main.flags() + [f'--run_dir={published}', '--stop_at_steps=1'], tmp_path))
    assert f"--run_dir='{published}' is a published run" in line
    assert 'python -m common.carry RUN_DIR FOLDER' in line and '--resume_from=FOLDER' in line
    assert _files(published) == before


def _rows(run_dir, rows):
    with open(os.path.join(run_dir, 'metrics.csv'), 'w') as f:
        f.write('wall_time,env_steps,episodes,session_start\n' + ''.join(
            f'{index},{steps},0,{start}\n' for index, (steps, start) in enumerate(rows)))


@pytest.mark.parametrize('paper', PAPERS)
def test_a_run_directory_that_cannot_be_trained_in_is_refused_before_anything_is_written(
        paper, tmp_path):
    """Every paper's run directory check: a published run, a carry, and a run whose CSVs show
    training a checkpoint it no longer holds would keep (a session resumed or carried, or a row
    past the first checkpoint due) are each refused in one line; the rows of sessions killed
    before their first checkpoint are not (the next session sets them aside)."""
    module = importlib.import_module(f'{paper}_tf.main')
    config = module.configure([_preset(paper)], [])
    identity = app.run_identity(paper, config.env_config, **module.PAPER.model_identity(config))
    every = config.checkpoint_every_steps
    cases = {
        'published': ('policy_weights.index', 'is a published run'),
        'published-without-policy': ('NO_POLICY.txt', 'is a published run'),
        'carry': ('carry.json', 'is a carried run (carry.json) and is never trained in: go on '
                  'from it with --resume_from='),
    }
    for name, (marker, named) in cases.items():
        run_dir = tmp_path / name
        run_dir.mkdir()
        (run_dir / marker).write_text('')
        _rows(run_dir, [(every * 3, 'new')])
        before = _files(run_dir)
        with pytest.raises(errors.ConfigError, match=re.escape(named)) as refused:
            app.check_run_dir(str(run_dir), identity, every)
        assert '\n' not in str(refused.value) and _files(run_dir) == before
    lost = {'resumed': ([(10, 'new'), (20, ''), (30, 'resumed')], 'a session resumed from a '
                        'checkpoint, rows to step 30'),
            'carried': ([(40, 'carried')], 'a session carried from a checkpoint'),
            'past': ([(10, 'new'), (every + 1, '')], f'rows to step {every + 1:,}, past the '
                     f'checkpoint due at {every:,}')}
    for name, (rows, named) in lost.items():
        run_dir = tmp_path / name
        app.prepare_run_dir(str(run_dir), {'paper': paper}, identity)
        _rows(run_dir, rows)
        before = _files(run_dir)
        with pytest.raises(errors.ConfigError, match=re.escape(named)) as refused:
            app.check_run_dir(str(run_dir), identity, every)
        assert 'but no checkpoint to go on from' in str(refused.value)
        assert 'is missing); starting over would set its curve aside' in str(refused.value)
        assert '\n' not in str(refused.value) and _files(run_dir) == before
    killed = tmp_path / 'killed'
    app.prepare_run_dir(str(killed), {'paper': paper}, identity)
    _rows(killed, [(10, 'new'), (every, '')])
    app.check_run_dir(str(killed), identity, every)
