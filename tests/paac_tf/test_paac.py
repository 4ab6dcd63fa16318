"""PAAC: the learner's tf.functions, the master loop, and learning on CartPole."""
import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf

from common import evaluate
from common.envs import gym as gym_envs
from common.envs import pools
from paac_tf import paac


def _cartpole_config(**overrides):
    values = dict(env_config=gym_envs.GymConfig('CartPole-v1'), num_envs=4, num_workers=1,
                  t_max=5, total_steps=10_000, network='mlp', learning_rate=0.01,
                  clip_norm=40.0, seed=3)
    values.update(overrides)
    config = paac.PAACConfig(**values)
    config.validate()
    return config


def test_act_returns_one_valid_action_per_environment():
    config = _cartpole_config()
    learner = paac.build_learner(config)
    observations = np.zeros((7, 4), np.float32)
    actions = learner.act(observations).numpy()
    assert actions.shape == (7,) and actions.dtype == np.int32
    assert set(actions) <= {0, 1}
    assert learner.greedy_act(observations).numpy().shape == (7,)


def test_sampled_actions_follow_the_policy():
    logits = tf.constant([[0.0, np.log(3.0)]] * 20000)
    actions = paac.sample_actions(logits, tf.random.Generator.from_seed(0)).numpy()
    assert abs(actions.mean() - 0.75) < 0.01


def test_train_step_anneals_learning_rate_and_changes_weights():
    config = _cartpole_config(total_steps=4 * 5 * 4, learning_rate=0.01)
    learner = paac.build_learner(config)
    before = [variable.numpy().copy() for variable in learner.model.trainable_variables]
    rng = np.random.default_rng(0)
    observations = rng.normal(size=(6, 4, 4)).astype(np.float32)
    actions = rng.integers(0, 2, size=(5, 4)).astype(np.int32)
    rewards = np.ones((5, 4), np.float32)
    terminals = np.zeros((5, 4), np.float32)
    rates = [float(learner.train_step(observations, actions, rewards, terminals)
                   ['learning_rate'].numpy()) for _ in range(4)]
    np.testing.assert_allclose(rates, [0.01, 0.0075, 0.005, 0.0025], rtol=1e-5)
    after = learner.model.trainable_variables
    assert any(np.abs(b - a.numpy()).max() > 0 for b, a in zip(before, after))
    assert learner.train_step.experimental_get_tracing_count() == 1


def test_iterate_fills_the_rollout_and_carries_the_last_observation():
    config = _cartpole_config()
    learner = paac.build_learner(config)
    with pools.SerialPool(config.env_config, config.num_envs, seed=0) as pool:
        runner = paac.PAAC(config, pool, learner)
        runner.iterate()
        last = runner.buffer.observations[-1].copy()
        np.testing.assert_array_equal(runner.buffer.observations[0], last)
        assert set(np.unique(runner.buffer.actions)) <= {0, 1}
        np.testing.assert_array_equal(runner.buffer.rewards, 1.0)
        assert int(learner.optimizer.iterations.numpy()) == 1
        phases = runner.take_phase_seconds()
        assert set(phases) == {'env', 'act', 'learn'} and all(v > 0 for v in phases.values())


def test_invalid_values_are_named():
    with pytest.raises(common.app.ConfigError, match='num_envs'):
        _cartpole_config(num_envs=0)
    with pytest.raises(common.app.ConfigError, match='t_max'):
        _cartpole_config(t_max=-1)
    with pytest.raises(common.app.ConfigError, match='divisible'):
        _cartpole_config(num_envs=6, num_workers=4)
    with pytest.raises(common.app.ConfigError, match="'resnet'"):
        _cartpole_config(network='resnet')


def test_paac_learns_cartpole(tmp_path):
    """Mean return >= 400 over 20 evaluation episodes within a fixed step budget."""
    config = _cartpole_config(num_envs=16, num_workers=1, t_max=5, total_steps=150_000,
                              learning_rate=0.1, entropy_coef=0.01, value_loss_coef=0.5,
                              clip_norm=3.0, log_every_seconds=30.0, seed=1)

    def make_serial_pool(env_config, num_envs, seed, num_workers, num_groups):
        return pools.SerialPool(env_config, num_envs, seed=seed)

    paac.train(config, str(tmp_path), make_serial_pool)
    learner = paac.build_learner(config)
    checkpoint = tf.train.Checkpoint(model=learner.model)
    checkpoint.restore(tf.train.latest_checkpoint(str(tmp_path / 'checkpoints'))).expect_partial()
    scores = evaluate.run_episodes(config.env_config, lambda obs: learner.act(obs).numpy(),
                                   num_episodes=20, seed=99)
    assert scores.mean() >= 400, scores


def test_alternating_halves_produce_the_environments_own_trajectories():
    """The interleaved schedule stores, for every env, exactly what stepping it serially gives."""
    config = _cartpole_config(num_envs=4, num_workers=2, alternating_halves=True)
    learner = paac.build_learner(config)
    with pools.ProcessPool(config.env_config, config.num_envs, num_workers=2, seed=5,
                           num_groups=2) as pool:
        runner = paac.PAAC(config, pool, learner)
        first_observations = runner.buffer.observations[0].copy()
        runner.iterate()
        buffer = runner.buffer
        observations = buffer.observations.copy()
        observations[0] = first_observations  # iterate() carried the last one over already
        actions, rewards = buffer.actions.copy(), buffer.rewards.copy()
    assert int(learner.optimizer.iterations.numpy()) == 1
    with pools.SerialPool(config.env_config, config.num_envs, seed=5) as replay:
        np.testing.assert_array_equal(replay.reset(), observations[0])
        for step in range(config.t_max):
            result = replay.step(actions[step])
            np.testing.assert_array_equal(result.observations, observations[step + 1])
            np.testing.assert_array_equal(result.rewards, rewards[step])


def test_alternating_halves_need_an_even_number_of_workers():
    with pytest.raises(common.app.ConfigError, match='even num_workers'):
        _cartpole_config(num_envs=6, num_workers=3, alternating_halves=True)
