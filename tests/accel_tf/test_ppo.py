"""PPO's learner: its targets against tf-agents' GAE, the number of gradient steps per call, the
annealed ratio clip, and the minibatches covering the batch once per epoch."""
import dataclasses

import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf
from tf_agents.utils import value_ops

from accel_tf import config as config_lib
from accel_tf import kinds
from accel_tf import ppo
from accel_tf import sections
from common.envs import gym as gym_envs

HORIZON, NUM_ENVS = 6, 4
PPO_FIELDS = {field.name for field in dataclasses.fields(sections.PPOConfig)}


def _config(**overrides):
    """A validated PPO config; overrides of PPOConfig's fields go to that section."""
    values = dict(env_config=gym_envs.GymConfig('CartPole-v1'), algorithm='ppo', network='mlp',
                  num_workers=1, envs_per_worker=NUM_ENVS, horizon=HORIZON, optimizer='adam',
                  learning_rate=1e-3, learning_rate_scaling='none', total_steps=10_000, seed=4)
    phase = dict(epochs=3, minibatches=2)
    for name, value in overrides.items():
        (phase if name in PPO_FIELDS else values)[name] = value
    config = config_lib.AccelConfig(
        **values, actor_critic=sections.ActorCriticConfig(gae_lambda=0.9),
        ppo=sections.PPOConfig(**phase))
    config.validate()
    return config


def _rollout(seed=0):
    rng = np.random.default_rng(seed)
    observations = rng.normal(size=(HORIZON + 1, NUM_ENVS, 4)).astype(np.float32)
    actions = rng.integers(0, 2, size=(HORIZON, NUM_ENVS)).astype(np.int32)
    rewards = rng.normal(size=(HORIZON, NUM_ENVS)).astype(np.float32)
    terminals = (rng.random((HORIZON, NUM_ENVS)) < 0.2).astype(np.float32)
    return observations, actions, rewards, terminals


def test_targets_are_tf_agents_gae_and_the_sampling_log_probabilities():
    config = _config()
    learner = kinds.build_learner(config)
    assert isinstance(learner, ppo.PPOLearner)
    observations, actions, rewards, terminals = _rollout()
    flat_observations, flat_actions, old_log_probs, advantages, returns = \
        learner.rollout_targets(observations, actions, rewards, terminals)
    logits, values = learner.model(observations.reshape(-1, 4))
    values = values.numpy().reshape(HORIZON + 1, NUM_ENVS)
    expected = value_ops.generalized_advantage_estimation(
        values[:-1], values[-1], config.gamma * (1 - terminals), rewards, td_lambda=0.9,
        time_major=True).numpy()
    np.testing.assert_allclose(advantages.numpy(), expected.reshape(-1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(returns.numpy(), (expected + values[:-1]).reshape(-1),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(flat_observations.numpy(), observations[:-1].reshape(-1, 4))
    np.testing.assert_array_equal(flat_actions.numpy(), actions.reshape(-1))
    log_probs = tf.nn.log_softmax(logits).numpy()[:HORIZON * NUM_ENVS]
    np.testing.assert_allclose(old_log_probs.numpy(),
                               log_probs[np.arange(HORIZON * NUM_ENVS), actions.reshape(-1)],
                               rtol=1e-5)


def test_one_call_takes_epochs_times_minibatches_steps_and_traces_once():
    learner = kinds.build_learner(_config())
    for seed in range(2):
        stats = learner.train_on_rollout(*_rollout(seed))
    assert int(learner.optimizer.iterations.numpy()) == 2 * 3 * 2
    assert learner.train_on_rollout.experimental_get_tracing_count() == 1
    means = learner.update_means.take()
    assert set(means) == set(ppo.UPDATE_STATS) and np.isfinite(list(means.values())).all()
    assert float(stats['ratio_clip']) == pytest.approx(0.1)


def test_first_minibatch_step_has_ratio_one_and_later_steps_move_the_policy():
    """The first gradient step sees the sampling policy itself (ratio 1, KL 0)."""
    learner = kinds.build_learner(_config(epochs=1, minibatches=1, learning_rate=0.05))
    learner.train_on_rollout(*_rollout())
    first = learner.update_means.take()
    assert first['approx_kl'] == pytest.approx(0.0, abs=1e-6)
    assert first['clip_fraction'] == 0.0
    learner.train_on_rollout(*_rollout())  # new rollout: the old policy is the updated one
    assert learner.update_means.take()['approx_kl'] == pytest.approx(0.0, abs=1e-6)
    several = kinds.build_learner(_config(epochs=8, minibatches=1, learning_rate=0.05))
    several.train_on_rollout(*_rollout())
    assert several.update_means.take()['approx_kl'] != pytest.approx(0.0, abs=1e-6)


def test_ratio_clip_and_learning_rate_anneal_together_by_environment_steps():
    """Both decay linearly over total_steps environment steps, held through an iteration's
    gradient steps (rlpyt's PPO: 1 - itr / n_itr), so a resume with another batch continues
    them where they were."""
    batch = HORIZON * NUM_ENVS
    config = _config(total_steps=batch * 2, anneal_learning_rate=True,
                     anneal_ratio_clip=True, epochs=1, minibatches=2)
    learner = kinds.build_learner(config)
    clips, rates = [], []
    for env_steps in (0, batch):
        learner.set_env_steps(env_steps)
        for _ in range(2):
            clips.append(float(learner.current_ratio_clip()))
            rates.append(float(learner.optimizer.current_learning_rate()))
            learner.minibatch_step(*learner.rollout_targets(*_rollout()))
    np.testing.assert_allclose(clips, [0.1, 0.1, 0.05, 0.05], rtol=1e-5)
    np.testing.assert_allclose(rates, [1e-3, 1e-3, 5e-4, 5e-4], rtol=1e-5)
    # Another batch after a resume: the schedules are where the steps say.
    learner.set_env_steps(batch * 3 // 2)
    assert float(learner.current_ratio_clip()) == pytest.approx(0.025)
    assert float(learner.optimizer.current_learning_rate()) == pytest.approx(2.5e-4)


def test_minibatches_cover_the_batch_once_per_epoch(monkeypatch):
    learner = kinds.build_learner(_config(epochs=2, minibatches=3))
    seen = []
    original = learner.minibatch_step

    def record(observations, actions, old_log_probs, advantages, returns):
        seen.append(observations)
        return original(observations, actions, old_log_probs, advantages, returns)

    monkeypatch.setattr(learner, 'minibatch_step', record)
    observations = _rollout()[0]
    tf.config.run_functions_eagerly(True)
    try:
        learner.train_on_rollout(observations, *_rollout()[1:])
    finally:
        tf.config.run_functions_eagerly(False)
    assert len(seen) == 6 and all(batch.shape == (8, 4) for batch in seen)
    expected = np.sort(observations[:-1].reshape(-1, 4)[:, 0])
    for epoch in range(2):
        rows = np.concatenate([batch.numpy()[:, 0] for batch in seen[3 * epoch:3 * epoch + 3]])
        np.testing.assert_array_equal(np.sort(rows), expected)


def test_normalized_advantages_are_the_minibatchs_standardized_by_hand():
    """normalize_advantages (baselines ppo2/model.py): the minibatch's advantages to mean 0 and
    standard deviation 1 (+ 1e-8) before the clipped objective, the same gradient as passing
    them standardized with the option off."""
    normalized = kinds.build_learner(_config(normalize_advantages=True))
    plain = kinds.build_learner(_config())
    plain.model.set_weights(normalized.model.get_weights())
    data = normalized.rollout_targets(*_rollout())
    advantages = data[3].numpy()
    assert abs(advantages.mean()) > 1e-3 or abs(advantages.std() - 1) > 1e-3
    by_hand = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    with_option, _ = normalized._minibatch_gradients(*data)
    standardized = data[:3] + (tf.constant(by_hand, tf.float32),) + data[4:]
    expected, _ = plain._minibatch_gradients(*standardized)
    without_option, _ = plain._minibatch_gradients(*data)
    for got, want in zip(with_option, expected):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-6)
    assert not all(np.allclose(got.numpy(), other.numpy(), atol=1e-6)
                   for got, other in zip(with_option, without_option))


# ---- minibatches of uint8 frames gathered on the device -----------------------------------

FRAME_HORIZON, FRAME_ENVS = 4, 3


def _frame_learner(frame_shape, jit_compile=False):
    """A PPO learner on uint8 frames of frame_shape (a small MLP: the gather is what is
    tested)."""
    from common.learners import networks
    from common.learners import optim
    model = networks.make_actor_critic(3, frame_shape, 'uint8', network='mlp',
                                       torso_kwargs={'hidden_sizes': (8,)}, seed=2)
    settings = ppo.PPOSettings(gamma=0.99, gae_lambda=0.95, ratio_clip=0.1, entropy_coef=0.01,
                               value_loss_coef=0.5, epochs=2, minibatches=3)
    return ppo.PPOLearner(model, optim.Adam(0.01), settings,
                          tf.TensorSpec((None,) + frame_shape, tf.uint8), FRAME_HORIZON, seed=3,
                          jit_compile=jit_compile)


def _frame_rollout(frame_shape, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (FRAME_HORIZON + 1, FRAME_ENVS) + frame_shape, dtype=np.uint8),
            rng.integers(0, 3, (FRAME_HORIZON, FRAME_ENVS)).astype(np.int32),
            rng.normal(size=(FRAME_HORIZON, FRAME_ENVS)).astype(np.float32),
            (rng.random((FRAME_HORIZON, FRAME_ENVS)) < 0.2).astype(np.float32))


@pytest.mark.parametrize('frame_shape', [(4, 4, 4), (3, 5, 2)])  # 64 bytes; 30, padded to 32
def test_packed_rows_gather_the_same_frames_bit_for_bit(frame_shape):
    frames = np.random.default_rng(1).integers(0, 256, (7,) + frame_shape, dtype=np.uint8)
    packed = ppo.packed_rows(tf.constant(frames))
    assert packed.dtype == tf.int32 and packed.shape == (7, -(-int(np.prod(frame_shape)) // 4))
    picked = [5, 0, 5, 3]
    rows = ppo.unpacked_rows(tf.gather(packed, picked), frame_shape, tf.uint8)
    assert rows.dtype == tf.uint8
    np.testing.assert_array_equal(rows.numpy(), frames[picked])
    floats = tf.constant(frames, tf.float32)
    assert ppo.packed_rows(floats) is floats  # only uint8 is packed


def _graph_nodes(graph_def):
    """Every node of a traced graph, the bodies of its loops and conditionals included."""
    yield from graph_def.node
    for function in graph_def.library.function:
        yield from function.node_def


def test_a_phase_gathers_no_uint8_on_the_device_and_every_gather_has_a_gpu_kernel():
    """TensorFlow registers GPU GatherV2 kernels for int32 but not uint8 (checked here against
    the installed kernel registry): the phase's minibatch gathers are of dtypes a GPU runs."""
    from tensorflow.python.framework import kernels
    gpu_types = {tf.as_dtype(dtype) for kernel in kernels.get_registered_kernels_for_op(
        'GatherV2').kernel if kernel.device_type == 'GPU'
        for constraint in kernel.constraint if constraint.name == 'Tparams'
        for dtype in constraint.allowed_values.list.type}
    assert tf.int32 in gpu_types and tf.uint8 not in gpu_types
    learner = _frame_learner((4, 4, 4))
    graph_def = learner.train_on_rollout.get_concrete_function().graph.as_graph_def()
    gathered = [tf.as_dtype(node.attr['Tparams'].type) for node in _graph_nodes(graph_def)
                if node.op == 'GatherV2']
    assert tf.int32 in gathered, gathered  # the packed frames
    assert tf.uint8 not in gathered and set(gathered) <= gpu_types, gathered


@pytest.mark.parametrize('frame_shape', [(4, 4, 4), (3, 5, 2)])
def test_a_phase_on_packed_frames_gives_the_weights_of_gathering_the_frames(monkeypatch,
                                                                             frame_shape):
    rollout = _frame_rollout(frame_shape)
    packed = _frame_learner(frame_shape)
    stats = packed.train_on_rollout(*rollout)
    # The path before packing: the uint8 frames gathered as they are.
    monkeypatch.setattr(ppo, 'packed_rows', lambda observations: observations)
    monkeypatch.setattr(ppo, 'unpacked_rows', lambda rows, frame_shape, dtype: rows)
    plain = _frame_learner(frame_shape)
    plain_stats = plain.train_on_rollout(*rollout)
    assert int(packed.optimizer.iterations.numpy()) == 2 * 3
    for got, want in zip(packed.model.trainable_variables, plain.model.trainable_variables):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    for name in ppo.UPDATE_STATS:
        assert float(stats[name]) == float(plain_stats[name])
    assert float(stats['approx_kl']) != 0.0  # the later steps moved the policy


def test_appo_minibatch_gradients_gather_on_the_device_what_indexing_the_batch_gave():
    """flat_minibatch_gradients takes the whole packed batch and the picked rows: the same
    gradient and statistics as the minibatch indexed on the host before, in one vector, and no
    uint8 gather in its graph."""
    frame_shape = (3, 5, 2)
    learner = _frame_learner(frame_shape)
    observations, actions, rewards, terminals = _frame_rollout(frame_shape)
    log_probs = np.random.default_rng(4).normal(size=actions.shape).astype(np.float32)
    data = learner.sampled_rollout_targets(observations, actions, rewards, terminals, log_probs)
    assert data[0].dtype == tf.int32  # packed frames
    picked = np.array([7, 2, 11, 0], np.int32)
    flat = learner.flat_minibatch_gradients(*data, picked).numpy()
    # The minibatch as the APPO actor-learner indexed it on the host before.
    frames = observations[:-1].reshape((-1,) + frame_shape)[picked]
    rest = [tensor.numpy()[picked] for tensor in data[1:]]
    assert rest[1].tolist() == log_probs.reshape(-1)[picked].tolist()
    gradients, stats = tf.function(learner._minibatch_gradients)(tf.constant(frames), *rest)
    expected = np.concatenate([gradient.numpy().reshape(-1) for gradient in gradients] + [
        np.array([float(stats[name]) for name in ppo.MINIBATCH_STATS], np.float32)])
    np.testing.assert_array_equal(flat, expected)
    graph_def = learner.flat_minibatch_gradients.get_concrete_function().graph.as_graph_def()
    assert tf.uint8 not in [tf.as_dtype(node.attr['Tparams'].type)
                            for node in _graph_nodes(graph_def) if node.op == 'GatherV2']


def test_assign_parameters_sets_every_variable_from_one_flat_vector():
    learner = _frame_learner((4, 4, 4))
    variables = learner.model.trainable_variables
    sizes = [int(np.prod(variable.shape)) for variable in variables]
    flat = np.arange(sum(sizes), dtype=np.float32) / 7
    learner.assign_parameters(flat)
    start = 0
    for variable, size in zip(variables, sizes):
        np.testing.assert_array_equal(variable.numpy(),
                                      flat[start:start + size].reshape(variable.shape))
        start += size


def test_with_jit_compile_a_phase_shuffles_and_steps_as_without(xla_compiled_calls):
    """RunConfig.jit_compile compiles the network calls only (common/learners/xla.py): the
    minibatch shuffles draw the same numbers, so the weights agree to float tolerance."""
    plain, compiled = _frame_learner((4, 4, 4)), _frame_learner((4, 4, 4), jit_compile=True)
    assert xla_compiled_calls(compiled.train_on_rollout.get_concrete_function())
    assert not xla_compiled_calls(plain.train_on_rollout.get_concrete_function())
    rollout = _frame_rollout((4, 4, 4))
    for mine, theirs in zip(plain.act_with_log_probs(rollout[0][0]),
                            compiled.act_with_log_probs(rollout[0][0])):
        np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)
    for seed in range(2):
        rollout = _frame_rollout((4, 4, 4), seed)
        plain.train_on_rollout(*rollout)
        compiled.train_on_rollout(*rollout)
    for mine, theirs in zip(plain.model.trainable_variables, compiled.model.trainable_variables):
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-5)
