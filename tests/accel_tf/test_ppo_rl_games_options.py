"""rl_games' PPO options: PPOConfig.kl_target (the learning rate adapted after every minibatch
step by that step's approx_kl_k2), normalize_values (the value head predicts returns
standardized by their running moments) and normalize_observations (each observation element
standardized by running moments that the training minibatches update), and what a run's
checkpoint keeps."""
import os

import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf
from tf_agents.utils import value_ops

from accel_tf import config as config_lib
from accel_tf import kinds
from accel_tf import main as accel_main
from accel_tf import ppo
from accel_tf import sections
from common.envs import gym as gym_envs
from common.launch import app
from common.learners import optim
from common.system import errors
from common.units import on_policy

HORIZON, NUM_ENVS = 6, 4
EPOCHS, MINIBATCHES = 2, 3


def _learner(kl_target=0.0, learning_rate=1e-3, normalize_values=False,
             normalize_observations=False, overlap_learning=False):
    config = config_lib.AccelConfig(
        env_config=gym_envs.GymConfig('CartPole-v1'), algorithm='ppo', network='mlp',
        num_workers=1, envs_per_worker=NUM_ENVS, horizon=HORIZON, optimizer='adam',
        learning_rate=learning_rate, learning_rate_scaling='none', total_steps=10_000, seed=4,
        overlap_learning=overlap_learning,
        actor_critic=sections.ActorCriticConfig(gae_lambda=0.9),
        ppo=sections.PPOConfig(epochs=EPOCHS, minibatches=MINIBATCHES, kl_target=kl_target,
                               normalize_values=normalize_values,
                               normalize_observations=normalize_observations))
    config.validate()
    return kinds.build_learner(config)


def _rollout(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(HORIZON + 1, NUM_ENVS, 4)).astype(np.float32),
            rng.integers(0, 2, size=(HORIZON, NUM_ENVS)).astype(np.int32),
            rng.normal(3.0, 2.0, size=(HORIZON, NUM_ENVS)).astype(np.float32),
            (rng.random((HORIZON, NUM_ENVS)) < 0.2).astype(np.float32))


def test_off_by_default_the_rate_is_the_configured_one():
    learner = _learner(kl_target=0.0)
    assert not isinstance(learner.optimizer.learning_rate, optim.KLAdaptiveRate)
    learner.train_on_rollout(*_rollout())
    assert learner.update_means.take()['learning_rate'] == pytest.approx(1e-3)


def test_a_policy_that_moves_too_little_raises_the_rate_every_step():
    learner = _learner(kl_target=1e3, learning_rate=1e-4)  # every KL far below target / 2
    learner.train_on_rollout(*_rollout())
    steps = EPOCHS * MINIBATCHES
    assert int(learner.optimizer.iterations.numpy()) == steps
    assert float(learner.optimizer.current_learning_rate()) == pytest.approx(
        1e-4 * 1.5 ** steps, rel=1e-5)
    learner.train_on_rollout(*_rollout())  # then held at the bound, 1e-2
    assert float(learner.optimizer.current_learning_rate()) == pytest.approx(1e-2)


def test_a_policy_that_moves_too_much_lowers_the_rate_after_the_first_step():
    """The first step sees the sampling policy itself (KL 0: raised); every later one a policy
    already moved (KL above 2 x 1e-12: lowered)."""
    learner = _learner(kl_target=1e-12)
    stats = learner.train_on_rollout(*_rollout())
    steps = EPOCHS * MINIBATCHES
    assert float(stats['approx_kl_k2']) > 2e-12
    assert float(learner.optimizer.current_learning_rate()) == pytest.approx(
        1e-3 * 1.5 / 1.5 ** (steps - 1), rel=1e-5)
    # The learning_rate column holds each step's own rate: its mean over the call's steps.
    rates = [1e-3 * 1.5 ** min(step, 1) / 1.5 ** max(step - 1, 0) for step in range(steps)]
    assert learner.update_means.take()['learning_rate'] == pytest.approx(np.mean(rates),
                                                                         rel=1e-5)


def test_the_learner_refuses_an_optimizer_without_an_adaptive_rate():
    learner = _learner(kl_target=0.0)
    settings = learner.settings.__class__(**{**learner.settings.__dict__, 'kl_target': 0.01})
    with pytest.raises(ValueError, match='kl_target=0.01 needs an optimizer whose learning_rate '
                                         'is an optim.KLAdaptiveRate, got float'):
        ppo.PPOLearner(learner.model, optim.Adam(1e-3), settings,
                       tf.TensorSpec((None, 4), tf.float32), HORIZON)


def _pooled(count, mean, variance, batch):
    """The moments after one RunningMoments.update, by hand."""
    total = count + batch.size
    squares = (variance * count + batch.var(ddof=1) * batch.size
               + (batch.mean() - mean) ** 2 * count * batch.size / total)
    return total, mean + (batch.mean() - mean) * batch.size / total, squares / total


def test_normalized_values_targets_are_standardized_returns_of_the_unstandardized_head():
    """As rl_games: the head's values back in returns' units (x sqrt(1 + 1e-5) from the prior),
    GAE on them, the moments updated by the values and then the returns, which are then
    standardized; the advantages stay in returns' units."""
    learner = _learner(normalize_values=True)
    observations, actions, rewards, terminals = _rollout()
    _, head = learner.model(observations.reshape(-1, 4))
    values = np.clip(head.numpy(), -5, 5).reshape(HORIZON + 1, NUM_ENVS) * np.sqrt(1 + 1e-5)
    advantages = value_ops.generalized_advantage_estimation(
        values[:-1], values[-1], 0.99 * (1 - terminals), rewards, td_lambda=0.9,
        time_major=True).numpy()
    returns = advantages + values[:-1]
    moments = _pooled(1.0, 0.0, 1.0, values[:-1].reshape(-1))
    count, mean, variance = _pooled(*moments, returns.reshape(-1))
    targets = learner.rollout_targets(observations, actions, rewards, terminals)
    np.testing.assert_allclose(targets[3].numpy(), advantages.reshape(-1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        targets[4].numpy(),
        np.clip((returns.reshape(-1) - mean) / np.sqrt(variance + 1e-5), -5, 5), rtol=1e-4,
        atol=1e-5)
    assert float(learner.value_moments.mean.numpy()) == pytest.approx(mean, rel=1e-5)
    assert float(learner.value_moments.variance.numpy()) == pytest.approx(variance, rel=1e-5)
    assert float(learner.value_moments.count.numpy()) == count == 1 + 2 * HORIZON * NUM_ENVS
    assert abs(mean) > 1.0  # rewards of mean 3: the targets' scale did change


def test_every_training_minibatch_updates_the_observation_moments_the_model_standardizes_by():
    """Each epoch's minibatches cover the batch once: after one call the moments pool the
    prior with EPOCHS copies of the batch (rl_games updates them in every training forward)."""
    learner = _learner(normalize_observations=True, overlap_learning=True)
    moments = learner.model.observation_moments
    observations, actions, rewards, terminals = _rollout()
    learner.train_on_rollout(observations, actions, rewards, terminals)
    batch = observations[:-1].reshape(-1, 4).astype(np.float64)
    count = 1 + EPOCHS * batch.shape[0]
    assert float(moments.count.numpy()) == count
    np.testing.assert_allclose(moments.mean.numpy(), EPOCHS * batch.sum(0) / count, rtol=1e-4)
    # The model standardizes by them before its torso (and clips at 5).
    standardized = np.clip((batch - moments.mean.numpy()) / np.sqrt(
        moments.variance.numpy() + 1e-5), -5, 5).astype(np.float32)
    logits, values = learner.model(batch.astype(np.float32))
    features = learner.model.torso(standardized)
    np.testing.assert_allclose(logits.numpy(), learner.model.policy_head(features).numpy(),
                               rtol=1e-4, atol=1e-5)
    # The acting copy of an overlapped run gets them with the parameters.
    learner.sync_acting()
    np.testing.assert_array_equal(learner.acting_model.observation_moments.mean.numpy(),
                                  moments.mean.numpy())


def test_a_runs_checkpoint_keeps_the_adaptive_rate_and_the_moments(tmp_path):
    learner = _learner(kl_target=1e-12, normalize_values=True, normalize_observations=True)
    learner.train_on_rollout(*_rollout())
    kept = on_policy.trackables(learner)
    assert kept['value_moments'] is learner.value_moments
    path = tf.train.Checkpoint(**kept).save(str(tmp_path / 'ckpt'))
    fresh = _learner(kl_target=1e-12, normalize_values=True, normalize_observations=True)
    tf.train.Checkpoint(**on_policy.trackables(fresh)).restore(path).assert_consumed()
    for name in ('mean', 'variance', 'count'):
        for kept_moments, restored in ((learner.value_moments, fresh.value_moments), (
                learner.model.observation_moments, fresh.model.observation_moments)):
            np.testing.assert_array_equal(getattr(restored, name).numpy(),
                                          getattr(kept_moments, name).numpy())
    assert float(fresh.model.observation_moments.count.numpy()) > 1
    rate = float(learner.optimizer.current_learning_rate())
    assert rate < 1e-3 and float(fresh.optimizer.current_learning_rate()) == rate
    assert 'value_moments' not in on_policy.trackables(_learner())


APPO = ["AccelConfig.algorithm = 'appo'", 'AccelConfig.anneal_learning_rate = False',
        'PPOConfig.anneal_ratio_clip = False']
MIRRORED = ["DistributeConfig.strategy = 'mirrored'", 'DistributeConfig.num_replicas = 2']


@pytest.mark.parametrize('bindings, named', [
    (['PPOConfig.kl_target = -0.01'], 'PPOConfig.kl_target must be >= 0'),
    (['PPOConfig.kl_target = 0.01'],
     'sets the learning rate; AccelConfig.anneal_learning_rate must then be False'),
    (APPO + ['PPOConfig.kl_target = 0.01'], "available for ppo, not algorithm='appo'"),
    (['AccelConfig.anneal_learning_rate = False', 'PPOConfig.kl_target = 0.01',
      'AccelConfig.learning_rate = 0.5'], 'the scaled AccelConfig.learning_rate 0.5 is outside'),
    (APPO + ['PPOConfig.normalize_values = True'],
     "PPOConfig.normalize_values=True; available for ppo, not algorithm='appo'"),
    (APPO + ['PPOConfig.normalize_observations = True'],
     "PPOConfig.normalize_observations=True; available for ppo, not algorithm='appo'"),
    (MIRRORED + ['PPOConfig.normalize_values = True'],
     "normalize_values=True is built for DistributeConfig.strategy='none' only, not 'mirrored'"),
])
def test_a_bad_option_is_named_in_one_line(bindings, named):
    """On gin/accel/ppo_pong.gin (which anneals its learning rate)."""
    with pytest.raises(errors.ConfigError) as error:
        accel_main.configure([os.path.join(app.PROJECT_ROOT, 'gin/accel/ppo_pong.gin')],
                             bindings)
    message = str(error.value)
    assert named in message and '\n' not in message
