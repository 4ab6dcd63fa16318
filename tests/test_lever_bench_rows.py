"""The bench's lever rows measure what they name: .../bfloat16 learners whose torsos compute in
bfloat16 (and the speed test takes compute_dtype), .../overlap learners that update on a thread
while sampling, paac/ale_vector a pool of ale_py's vector env; so their ratio to the plain rows
is the lever's."""
import threading

import gin
import pytest
import tf_keras as keras

from accel_tf import bench_rows as accel_rows
from common.envs import ale_vector
from dqn_tf import speedtest
from paac_tf import bench_rows as paac_rows

SETTINGS = {'seconds': 0.3, 'warmup_seconds': 0.0, 'num_envs': 8, 'game': 'pong',
            'num_workers': 2}


def _torso_dtypes(model):
    return {layer.compute_dtype for layer in model.torso.submodules
            if isinstance(layer, (keras.layers.Conv2D, keras.layers.Dense))}


def _remember_learners(monkeypatch, module, built):
    real_build = module.build_learner

    def remember(config, *args):
        built.append(real_build(config, *args))
        return built[-1]

    monkeypatch.setattr(module, 'build_learner', remember)


@pytest.mark.slow
def test_accel_and_paac_bfloat16_rows_train_bfloat16_torsos(monkeypatch):
    built = []
    _remember_learners(monkeypatch, accel_rows.kinds, built)
    _remember_learners(monkeypatch, paac_rows.paac, built)
    names = ((accel_rows.ROWS, 'accel/a2c/learn/bfloat16'), (paac_rows.ROWS, 'paac/bfloat16'),
             (paac_rows.ROWS, 'paac/ale_vector/bfloat16'),
             (paac_rows.ROWS, 'paac/ale_vector/reuse/bfloat16'),
             (paac_rows.ROWS, 'paac/network/reuse/bfloat16'),
             (paac_rows.ROWS, 'paac/network/bfloat16'))
    for rows, name in names:
        gin.clear_config()
        assert rows[name](SETTINGS)['steps_per_sec'] > 0, name
    # (float32 without the option: tests/test_jit_compile_presets.py)
    assert [_torso_dtypes(learner.model) for learner in built] == [{'bfloat16'}] * len(names)


@pytest.mark.slow
def test_the_fast_preset_rows_train_in_the_dtype_they_name(monkeypatch):
    """accel/fast is the preset as it is: its compute_dtype 'auto' becomes the machine's native
    dtype (faked here as bfloat16); the /float32 and /bfloat16 rows fix it."""
    from common.system import native_dtype  # pylint: disable=import-outside-toplevel
    monkeypatch.setattr(native_dtype, 'native_dtype', lambda: ('bfloat16', 'faked'))
    built = []
    _remember_learners(monkeypatch, accel_rows.kinds, built)
    for name in ('accel/fast', 'accel/fast/float32', 'accel/fast/bfloat16'):
        gin.clear_config()
        assert accel_rows.ROWS[name](SETTINGS)['steps_per_sec'] > 0, name
    assert [_torso_dtypes(learner.model) for learner in built] == [
        {'bfloat16'}, {'float32'}, {'bfloat16'}]


def test_the_speed_test_configures_the_compute_dtype():
    gin.clear_config()
    assert speedtest.speedtest_config('both', 8, compute_dtype='bfloat16').compute_dtype == \
        'bfloat16'
    gin.clear_config()
    assert speedtest.speedtest_config('both', 8).compute_dtype == 'float32'


@pytest.mark.slow
def test_the_overlap_rows_train_on_a_thread_and_leave_none(monkeypatch):
    built = []
    _remember_learners(monkeypatch, accel_rows.kinds, built)
    gin.clear_config()
    assert accel_rows.ROWS['accel/a2c/overlap'](SETTINGS)['steps_per_sec'] > 0
    assert [hasattr(learner, 'lagged_act') for learner in built] == [True]
    assert int(built[0].optimizer.iterations.numpy()) > 0
    assert not any(thread.name.startswith('update') for thread in threading.enumerate())


@pytest.mark.slow
def test_the_paac_ale_vector_row_steps_ale_pys_vector_env(monkeypatch):
    steps = []
    real_step = ale_vector.AleVectorPool.step

    def counted(pool, actions):
        steps.append(len(actions))
        return real_step(pool, actions)

    monkeypatch.setattr(ale_vector.AleVectorPool, 'step', counted)
    gin.clear_config()
    assert paac_rows.ROWS['paac/ale_vector'](SETTINGS)['steps_per_sec'] > 0
    assert steps and set(steps) == {SETTINGS['num_envs']}


@pytest.mark.slow
def test_the_paac_ale_vector_alternating_row_steps_two_groups_in_turn(monkeypatch):
    groups = []
    real_step_async = ale_vector.AleVectorPool.step_async

    def counted(pool, actions, group=0):
        groups.append((group, len(actions)))
        return real_step_async(pool, actions, group)

    monkeypatch.setattr(ale_vector.AleVectorPool, 'step_async', counted)
    gin.clear_config()
    assert paac_rows.ROWS['paac/ale_vector/alternating'](SETTINGS)['steps_per_sec'] > 0
    half = SETTINGS['num_envs'] // 2
    assert groups[:4] == [(0, half), (1, half), (0, half), (1, half)]


@pytest.mark.slow
def test_the_paac_network_row_steps_no_environment_while_timed(monkeypatch):
    steps, updates = [], []
    real_step = ale_vector.AleVectorPool.step
    monkeypatch.setattr(ale_vector.AleVectorPool, 'step',
                        lambda pool, actions: steps.append(1) or real_step(pool, actions))
    real_build = paac_rows.paac.build_learner

    def build_counting(config):
        learner = real_build(config)
        train = learner.train_on_rollout
        learner.train_on_rollout = lambda *rollout: updates.append(1) or train(*rollout)
        return learner

    monkeypatch.setattr(paac_rows.paac, 'build_learner', build_counting)
    gin.clear_config()
    result = paac_rows.ROWS['paac/network'](SETTINGS)
    assert result['steps_per_sec'] > 0 and updates
    assert len(steps) == 5  # the one rollout of real frames (horizon 5), before the timing
    assert result['steps_per_sec'] == pytest.approx(
        5 * SETTINGS['num_envs'] * len(updates) / result['seconds'], rel=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize('rows, name', [(paac_rows.ROWS, 'paac/network/reuse'),
                                        (accel_rows.ROWS, 'accel/a2c/reuse'),
                                        (paac_rows.ROWS, 'paac/ale_vector/reuse'),
                                        (paac_rows.ROWS, 'paac/network/reuse/bfloat16'),
                                        (paac_rows.ROWS, 'paac/ale_vector/reuse/bfloat16')])
def test_the_reuse_rows_train_on_the_acting_pass_and_never_on_a_forward_of_their_own(
        monkeypatch, rows, name):
    built = []
    _remember_learners(monkeypatch, accel_rows.kinds, built)
    _remember_learners(monkeypatch, paac_rows.paac, built)
    gin.clear_config()
    from common.learners import actor_critic  # pylint: disable=import-outside-toplevel
    plain = []
    real = actor_critic.ActorCriticLearner._train_on_rollout  # pylint: disable=protected-access
    monkeypatch.setattr(actor_critic.ActorCriticLearner, '_train_on_rollout',
                        lambda *args: plain.append(1) or real(*args))
    assert rows[name](SETTINGS)['steps_per_sec'] > 0
    (learner,) = built
    assert learner.reuses_activations and int(learner.optimizer.iterations.numpy()) > 0
    assert not plain  # (traced at build time it would count: tf.functions trace lazily)
