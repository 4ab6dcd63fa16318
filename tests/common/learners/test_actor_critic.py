"""The shared actor-critic learner: its targets, gradients and updates against tf-agents and
hand computations, on a tiny network."""
import sys

import common  # noqa: F401
import numpy as np
import pytest
import tensorflow as tf
from tf_agents.utils import value_ops

from common.learners import actor_critic
from common.learners import networks
from common.learners import optim

SPEC = tf.TensorSpec((None, 4), tf.float32)


def _learner(horizon=3, seed=0, **settings):
    model = networks.make_actor_critic(3, (4,), np.float32, network='mlp',
                                       torso_kwargs={'hidden_sizes': (8,)})
    values = dict(gamma=0.9, entropy_coef=0.01, value_loss_coef=0.5)
    values.update(settings)
    return actor_critic.ActorCriticLearner(
        model, optim.RMSProp(0.01), actor_critic.LossSettings(**values), SPEC, seed=seed,
        horizon=horizon)


def _rollout(seed, horizon=3, num_envs=2):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(horizon + 1, num_envs, 4)).astype(np.float32),
            rng.integers(0, 3, size=(horizon, num_envs)).astype(np.int32),
            rng.normal(size=(horizon, num_envs)).astype(np.float32),
            np.float32(rng.random((horizon, num_envs)) < 0.3))


def test_rollout_targets_are_n_step_returns_or_gae_as_tf_agents_computes_them():
    observations, _, rewards, terminals = _rollout(1)
    learner = _learner()
    _, values = learner.model(observations.reshape(-1, 4))
    values = values.numpy().reshape(4, 2)
    discounts = 0.9 * (1 - terminals)
    expected = value_ops.discounted_return(rewards, discounts, final_value=values[-1],
                                           time_major=True)
    np.testing.assert_allclose(learner.rollout_targets(observations, rewards, terminals),
                               np.reshape(expected, -1), rtol=1e-5, atol=1e-6)
    gae = _learner(gae_lambda=0.95)
    gae.model.set_weights(learner.model.get_weights())
    expected = value_ops.generalized_advantage_estimation(
        values[:-1], values[-1], discounts, rewards, td_lambda=0.95, time_major=True)
    np.testing.assert_allclose(gae.rollout_targets(observations, rewards, terminals),
                               np.reshape(expected, -1), rtol=1e-5, atol=1e-6)


def test_gae_with_lambda_one_trains_as_n_step_returns():
    """GAE(1) advantages plus V are the n-step returns, so both settings make one update."""
    observations, actions, rewards, terminals = _rollout(2)
    n_step, gae = _learner(), _learner(gae_lambda=1.0)
    gae.model.set_weights(n_step.model.get_weights())
    for learner in (n_step, gae):
        learner.train_on_rollout(observations, actions, rewards, terminals)
    for first, second in zip(n_step.model.get_weights(), gae.model.get_weights()):
        np.testing.assert_allclose(first, second, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize('clip_norm', [0.0, 0.01])
def test_flat_gradients_are_the_clipped_gradients_of_the_objective(clip_norm):
    learner = _learner(clip_norm=clip_norm, reduction='sum', scale=2.0)
    rng = np.random.default_rng(3)
    observations = rng.normal(size=(5, 4)).astype(np.float32)
    actions = np.int32([0, 2, 1, 1, 0])
    rewards = rng.normal(size=5).astype(np.float32)
    ends, end_values = np.float32([0, 1, 0, 0, 1]), np.float32([0, 0.5, 0, 0, -1.0])
    returns = actor_critic.losses.sequence_returns(rewards, ends, end_values, 0.9)
    with tf.GradientTape() as tape:
        logits, values = learner.model(observations)
        loss = actor_critic.losses.actor_critic_loss(logits, values, actions, returns, 0.01, 0.5)
        objective = 2.0 * 5 * loss.total  # scale, then the sum over the batch
    gradients = tape.gradient(objective, learner.model.trainable_variables)
    if clip_norm:
        gradients, _ = tf.clip_by_global_norm(gradients, clip_norm)
    expected = np.concatenate([g.numpy().ravel() for g in gradients])
    flat = learner.flat_gradients(observations, actions, rewards, ends, end_values).numpy()
    np.testing.assert_allclose(flat, expected, rtol=1e-5, atol=1e-7)
    if clip_norm:
        assert np.linalg.norm(flat) == pytest.approx(clip_norm, rel=1e-4)


def test_acting_and_training_trace_once_for_any_batch_size():
    learner = _learner()
    for num_envs in (2, 5):
        observations, actions, rewards, terminals = _rollout(num_envs, num_envs=num_envs)
        assert learner.act(observations[0]).numpy().shape == (num_envs,)
        assert set(learner.greedy_act(observations[0]).numpy()) <= {0, 1, 2}
        learner.train_on_rollout(observations, actions, rewards, terminals)
    for function in (learner.act, learner.greedy_act, learner.train_on_rollout):
        assert function.experimental_get_tracing_count() == 1
    assert int(learner.optimizer.iterations.numpy()) == 2


def test_sampled_actions_follow_the_policy():
    logits = tf.constant([[0.0, np.log(3.0)]] * 20000)
    actions = actor_critic.sample_actions(logits, tf.random.Generator.from_seed(0)).numpy()
    assert abs(actions.mean() - 0.75) < 0.01


def test_an_unknown_reduction_is_named():
    with pytest.raises(ValueError, match="'median'"):
        _learner(reduction='median')


def test_setting_the_schedules_env_steps_keeps_no_tensor_per_value():
    """set_env_steps runs before every update with a new step count; a Python int handed to
    TensorFlow keeps a cached tensor per value (PAAC's memory grew about 0.8 KB an update)."""
    model = networks.make_actor_critic(3, (4,), np.float32, network='mlp',
                                       torso_kwargs={'hidden_sizes': (8,)})
    schedule = optim.EnvStepSchedule(optim.LinearSchedule(0.01, 0.0, 1_000_000))
    learner = actor_critic.ActorCriticLearner(
        model, optim.RMSProp(schedule), actor_critic.LossSettings(0.9, 0.01, 0.5), SPEC,
        horizon=3)
    for steps in range(200):  # the first calls allocate once
        learner.set_env_steps(steps)
    blocks_before = sys.getallocatedblocks()
    for steps in range(1_000, 6_000):
        learner.set_env_steps(steps * 160)
    grown = sys.getallocatedblocks() - blocks_before
    assert grown < 1_000, grown  # a cached tensor per value: 5,000 blocks and more
    assert int(schedule.env_steps.numpy()) == 5_999 * 160
    assert float(schedule(0)) == pytest.approx(0.01 * (1 - 5_999 * 160 / 1_000_000))
