"""PPO's learner: its targets against tf-agents' GAE, the number of gradient steps per call, the
annealed ratio clip, and the minibatches covering the batch once per epoch."""
import dataclasses

import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf
from tf_agents.utils import value_ops

from accel_tf import config as config_lib
from accel_tf import learners
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
    learner = learners.build_learner(config)
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
    learner = learners.build_learner(_config())
    for seed in range(2):
        stats = learner.train_on_rollout(*_rollout(seed))
    assert int(learner.optimizer.iterations.numpy()) == 2 * 3 * 2
    assert learner.train_on_rollout.experimental_get_tracing_count() == 1
    means = learner.update_means.take()
    assert set(means) == set(ppo.UPDATE_STATS) and np.isfinite(list(means.values())).all()
    assert float(stats['ratio_clip']) == pytest.approx(0.1)


def test_first_minibatch_step_has_ratio_one_and_later_steps_move_the_policy():
    """The first gradient step sees the sampling policy itself (ratio 1, KL 0)."""
    learner = learners.build_learner(_config(epochs=1, minibatches=1, learning_rate=0.05))
    learner.train_on_rollout(*_rollout())
    first = learner.update_means.take()
    assert first['approx_kl'] == pytest.approx(0.0, abs=1e-6)
    assert first['clip_fraction'] == 0.0
    learner.train_on_rollout(*_rollout())  # new rollout: the old policy is the updated one
    assert learner.update_means.take()['approx_kl'] == pytest.approx(0.0, abs=1e-6)
    several = learners.build_learner(_config(epochs=8, minibatches=1, learning_rate=0.05))
    several.train_on_rollout(*_rollout())
    assert several.update_means.take()['approx_kl'] != pytest.approx(0.0, abs=1e-6)


def test_ratio_clip_and_learning_rate_anneal_together():
    config = _config(total_steps=HORIZON * NUM_ENVS * 2, anneal_learning_rate=True,
                     anneal_ratio_clip=True, epochs=1, minibatches=2)
    learner = learners.build_learner(config)
    clips, rates = [], []
    for _ in range(2):
        for _ in range(2):
            clips.append(float(learner.current_ratio_clip()))
            rates.append(float(learner.optimizer.current_learning_rate()))
            learner.minibatch_step(*learner.rollout_targets(*_rollout()))
    # 2 iterations x 2 steps: both decay linearly over the 4 gradient steps.
    np.testing.assert_allclose(clips, [0.1, 0.075, 0.05, 0.025], rtol=1e-5)
    np.testing.assert_allclose(rates, [1e-3, 7.5e-4, 5e-4, 2.5e-4], rtol=1e-5)


def test_minibatches_cover_the_batch_once_per_epoch(monkeypatch):
    learner = learners.build_learner(_config(epochs=2, minibatches=3))
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
    normalized = learners.build_learner(_config(normalize_advantages=True))
    plain = learners.build_learner(_config())
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
