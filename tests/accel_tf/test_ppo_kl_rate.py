"""PPOConfig.kl_target: the PPO learner adapts its learning rate after every minibatch step by
that step's approx_kl_k2 (rl_games' adaptive schedule), and a run's checkpoint keeps the rate."""
import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf

from accel_tf import config as config_lib
from accel_tf import kinds
from accel_tf import ppo
from accel_tf import sections
from common.envs import gym as gym_envs
from common.learners import optim

HORIZON, NUM_ENVS = 6, 4
EPOCHS, MINIBATCHES = 2, 3


def _learner(kl_target, learning_rate=1e-3):
    config = config_lib.AccelConfig(
        env_config=gym_envs.GymConfig('CartPole-v1'), algorithm='ppo', network='mlp',
        num_workers=1, envs_per_worker=NUM_ENVS, horizon=HORIZON, optimizer='adam',
        learning_rate=learning_rate, learning_rate_scaling='none', total_steps=10_000, seed=4,
        actor_critic=sections.ActorCriticConfig(gae_lambda=0.9),
        ppo=sections.PPOConfig(epochs=EPOCHS, minibatches=MINIBATCHES, kl_target=kl_target))
    config.validate()
    return kinds.build_learner(config)


def _rollout():
    rng = np.random.default_rng(0)
    return (rng.normal(size=(HORIZON + 1, NUM_ENVS, 4)).astype(np.float32),
            rng.integers(0, 2, size=(HORIZON, NUM_ENVS)).astype(np.int32),
            rng.normal(size=(HORIZON, NUM_ENVS)).astype(np.float32),
            np.zeros((HORIZON, NUM_ENVS), np.float32))


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
