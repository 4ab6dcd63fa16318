"""The algorithm table (accel_tf/algorithms.py) against the code it selects: every row's loop
kind has a trainer, its update kind a learner builder, a policy for evaluation and (if
asynchronous) an actor-learner using the row's optimizer (accel_tf/kinds.py), every section it
names exists, and every algorithm has a preset gin/accel/<name>_pong.gin that configures it and
builds its learner.
Also: nothing in accel_tf/ decides by comparing the algorithm's name, and the bindings of the
flat AccelConfig say what to bind instead (every field of every section is type-checked in
tests/test_entry_points.py)."""
import ast
import dataclasses
import glob
import json
import os

import gin
import pytest

from accel_tf import actor_learners
from accel_tf import algorithms
from accel_tf import config as config_lib
from accel_tf import kinds
from accel_tf import main as accel_main
from common.launch import app
from common.launch import config as common_config
from common.system import errors

ROOT = app.PROJECT_ROOT
# The sections each kind's code reads from the config, besides AccelConfig.
UPDATE_SECTIONS = {'actor_critic': ('ActorCriticConfig',),
                   'ppo': ('ActorCriticConfig', 'PPOConfig'),
                   'q_learning': ('QValueConfig',)}
LOOP_SECTIONS = {'on_policy': (), 'q_values': ('QValueConfig',),
                 'asynchronous': ('AsyncLearnersConfig',)}
ACTOR_LEARNER_SECTIONS = {actor_learners.A3CActorLearner: (),
                          actor_learners.APPOActorLearner: ('PPOConfig', 'APPOConfig')}
CARTPOLE = ['AccelConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'",
            "AccelConfig.network = 'mlp'", "AccelConfig.torso_kwargs = {'hidden_sizes': (16,)}"]


def _preset(name):
    return os.path.join(ROOT, 'gin', 'accel', f'{name}_pong.gin')


def missing_pieces(row):
    """One line for each piece of code or data that row names and accel_tf/ lacks."""
    missing = []

    def need(condition, what):
        if not condition:
            missing.append(f'{row.name}: {what}')

    need(row.loop in algorithms.LOOPS, f'loop {row.loop!r} is not in algorithms.LOOPS')
    need(row.loop in kinds.LOOPS, f'loop {row.loop!r} has no trainer in kinds.LOOPS')
    need(row.update in algorithms.UPDATES, f'update {row.update!r} is not in algorithms.UPDATES')
    update = kinds.UPDATES.get(row.update)
    need(update is not None, f'update {row.update!r} has no learner builder and no policy for '
         'evaluation: no entry in kinds.UPDATES')
    for section in row.sections:
        need(section in config_lib.SECTIONS, f'section {section!r} is not in config.SECTIONS')
    need(row.update in UPDATE_SECTIONS, f'update {row.update!r}: say in UPDATE_SECTIONS (this '
         'test) which sections its learner reads')
    need(row.loop in LOOP_SECTIONS, f'loop {row.loop!r}: say in LOOP_SECTIONS (this test) which '
         'sections its trainer reads')
    for section in (UPDATE_SECTIONS.get(row.update, ()) + LOOP_SECTIONS.get(row.loop, ())):
        need(section in row.sections, f'its update or loop reads {section}, the row does not')
    need(set(row.strategies) <= set(common_config.STRATEGIES) and 'none' in row.strategies,
         f'strategies {row.strategies} must include none, within {common_config.STRATEGIES}')
    need(row.optimizer in (None,) + config_lib.OPTIMIZERS, f'optimizer {row.optimizer!r}')
    need(not row.needs_gae or 'ActorCriticConfig' in row.sections,
         'needs_gae without ActorCriticConfig (gae_lambda)')
    need(not row.categorical or 'QValueConfig' in row.sections,
         'categorical without QValueConfig (num_atoms)')
    if row.loop == 'asynchronous':
        actor_learner = update.actor_learner if update else None
        need(actor_learner is not None,
             f'update {row.update!r} has no actor-learner in kinds.UPDATES')
        if actor_learner is not None:
            need(actor_learner.OPTIMIZER == row.optimizer,
                 f'its actor-learner updates the store with {actor_learner.OPTIMIZER!r}, the row '
                 f'forces {row.optimizer!r}')
            for section in ACTOR_LEARNER_SECTIONS.get(actor_learner, ()):
                need(section in row.sections,
                     f'its actor-learner reads {section}, the row does not')
    need(os.path.isfile(_preset(row.name)), f'no preset gin/accel/{row.name}_pong.gin')
    return missing


def test_every_row_has_every_piece_it_names():
    assert [line for row in algorithms.ROWS for line in missing_pieces(row)] == []
    assert len(algorithms.NAMES) == len(algorithms.ROWS)  # no name twice
    assert set(kinds.LOOPS) == set(algorithms.LOOPS)
    assert set(kinds.UPDATES) == set(algorithms.UPDATES)
    # Every section is read by some algorithm and lives in the AccelConfig field it names.
    fields = {field.name for field in dataclasses.fields(config_lib.AccelConfig)}
    for name, cls in config_lib.SECTIONS.items():
        assert algorithms.reading(name), name
        assert cls.__name__ == name and cls.FIELD in fields, name


def test_a_row_missing_a_piece_is_named():
    """What the test above says of a new row added without its code, section and preset."""
    row = algorithms.Algorithm('vtrace', loop='learner_queue', update='vtrace',
                               sections=('VTraceConfig',))
    missing = missing_pieces(row)
    for piece in ("loop 'learner_queue' has no trainer", "update 'vtrace' has no learner builder",
                  'no policy for evaluation: no entry in kinds.UPDATES',
                  "section 'VTraceConfig' is not in", 'no preset gin/accel/vtrace_pong.gin'):
        assert any(piece in line for line in missing), (piece, missing)
    async_row = dataclasses.replace(algorithms.BY_NAME['a3c'], optimizer='adam')
    assert missing_pieces(async_row) == [
        "a3c: its actor-learner updates the store with 'rmsprop', the row forces 'adam'"]


@pytest.mark.parametrize('name', algorithms.NAMES)
def test_every_algorithm_s_preset_configures_it_and_builds_its_learner(name):
    config = accel_main.configure([_preset(name)], [])
    assert config.algorithm == name
    assert tuple(type(section).__name__ for section in config.read_sections()) == \
        algorithms.BY_NAME[name].sections
    gin.clear_config()
    small = accel_main.configure([_preset(name)], CARTPOLE)
    learner = kinds.build_learner(small)
    assert learner.optimizer is not None


def _decides_by_name(node):
    """Whether an AST node compares the algorithm's name or looks it up (other than the one
    lookup of its row)."""
    def is_algorithm(expression):
        return (isinstance(expression, ast.Attribute) and expression.attr == 'algorithm') or (
            isinstance(expression, ast.Name) and expression.id == 'algorithm')

    if isinstance(node, ast.Compare):
        return any(is_algorithm(operand) for operand in [node.left] + node.comparators)
    if isinstance(node, ast.Subscript) and is_algorithm(node.slice):
        return ast.unparse(node.value) != 'algorithms.BY_NAME'
    return False


def test_nothing_decides_by_the_algorithm_s_name_but_its_row():
    offenders = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'accel_tf', '*.py'))):
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        offenders += [f'{os.path.basename(path)}:{node.lineno}: {ast.unparse(node)}'
                      for node in ast.walk(tree) if _decides_by_name(node)]
    assert offenders == []
    assert _decides_by_name(ast.parse("config.algorithm in ('ppo', 'appo')").body[0].value)
    assert _decides_by_name(ast.parse("UPDATES[config.algorithm]").body[0].value)


@pytest.mark.parametrize('old', sorted(config_lib.RENAMED))
def test_a_binding_of_the_flat_accel_config_says_what_to_bind_instead(old):
    field = old.split('.')[1]
    # No longer an AccelConfig field, but for q_values: a section field, not a binding.
    accel_fields = {field.name for field in dataclasses.fields(config_lib.AccelConfig)}
    assert (field in accel_fields) == (field == 'q_values')
    with pytest.raises(errors.ConfigError) as raised:
        accel_main.configure([_preset('appo')], [f'{old} = 1'])
    message = str(raised.value)
    assert message.startswith(f'{old} (') and 'is not a binding' in message
    if field == 'q_values':  # a section field: built from QValueConfig's own bindings
        assert 'remove it' in message
        return
    (target,) = [name for name in config_lib.SECTIONS if f'bind {name}.{field} instead' in message]
    assert field in {field.name for field in dataclasses.fields(config_lib.SECTIONS[target])}


def _record(run_dir, identity):
    run_dir.mkdir()
    (run_dir / app.RUN_FILE).write_text(json.dumps(identity))
    return str(run_dir)


def test_run_json_records_the_model_and_a_run_recorded_before_is_not_refused_for_it(tmp_path):
    rainbow = accel_main.configure([_preset('rainbow')], CARTPOLE)
    identity = accel_main.model_identity(rainbow)
    assert identity == {'algorithm': 'rainbow', 'network': 'mlp',
                        'torso_kwargs': {'hidden_sizes': (16,)}, 'dueling': True,
                        'num_atoms': 51}
    # A run.json written before these keys: the keys it lacks are left out of the comparison
    # (app.check_run_dir), what it holds is compared.
    env_identity = app.run_identity('accel', rainbow.env_config, **identity)
    old = {key: value for key, value in env_identity.items()
           if key not in ('torso_kwargs', 'dueling', 'num_atoms')}
    run_dir = _record(tmp_path / 'old', old)
    app.check_run_dir(run_dir, json.loads(json.dumps(env_identity)))
    with pytest.raises(errors.ConfigError, match="network: 'nature' there, 'mlp' here"):
        app.check_run_dir(_record(tmp_path / 'other', dict(old, network='nature')),
                          json.loads(json.dumps(env_identity)))
    gin.clear_config()
    a2c = accel_main.configure([_preset('a2c')], CARTPOLE)
    assert accel_main.model_identity(a2c) == {'algorithm': 'a2c', 'network': 'mlp',
                                              'torso_kwargs': {'hidden_sizes': (16,)}}
