"""A2C, PPO, A3C and APPO learn CartPole-v1: mean return >= 400 over 20 sampled-policy episodes
within a fixed step budget, through the same runners, samplers and learners as the Atari presets.

Budgets and seeds from a sweep (2-core AMD EPYC, under load from a DQN Pong run): A2C 150k
steps, seeds 0, 1, 2 all scored 500.0; PPO 100k steps, seeds 0, 1, 2, 3 all scored 500.0. The
tests use A2C seed 0 and PPO seed 1, so the margin is 100 on a maximum of 500.
A3C and APPO (2 learner processes each) are not deterministic: the learners' updates interleave
as the processes are scheduled. Sweep (same machine, under the same load): A3C at 150k steps
scored 500.0, 500.0 and 378.1 (seeds 0-2), at 250k 500.0, 475.9, 500.0, 500.0 (seeds 2-5), so
its budget is 250k; APPO at 150k scored 500.0 for seeds 0, 1, 2.
"""
import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf

from accel_tf import config as config_lib
from accel_tf import learners
from accel_tf import main as accel_main
from common import evaluate
from common.envs import gym as gym_envs
from common.envs import pools

A2C = dict(algorithm='a2c', envs_per_worker=16, horizon=5, total_steps=150_000,
           optimizer='rmsprop', learning_rate=3e-3, rmsprop_epsilon=1e-5,
           rmsprop_epsilon_inside_sqrt=False, rmsprop_initial_mean_square=0.0,
           entropy_coef=0.01, value_loss_coef=0.25, clip_norm=1.0, seed=0)
PPO = dict(algorithm='ppo', envs_per_worker=16, horizon=16, total_steps=100_000,
           optimizer='adam', learning_rate=1e-3, gae_lambda=0.95, epochs=4, minibatches=4,
           ratio_clip=0.2, entropy_coef=0.01, value_loss_coef=0.25, clip_norm=1.0, seed=1)

# Two learner processes, each with its own worker process of 8 environments (process pools: the
# units' pools are opened in the learner processes).
A3C = dict(algorithm='a3c', num_learners=2, envs_per_worker=8, horizon=5, total_steps=250_000,
           optimizer='rmsprop', learning_rate=3e-3, rmsprop_epsilon=1e-5,
           rmsprop_epsilon_inside_sqrt=False, rmsprop_initial_mean_square=0.0,
           entropy_coef=0.01, value_loss_coef=0.25, clip_norm=1.0, seed=0)
APPO = dict(algorithm='appo', num_learners=2, envs_per_worker=8, horizon=32,
            total_steps=150_000, optimizer='adam', learning_rate=1e-3, gae_lambda=0.95, epochs=4,
            minibatches=4, ratio_clip=0.2, entropy_coef=0.01, value_loss_coef=0.25,
            clip_norm=1.0, pull_every_steps=16, local_steps_per_sync=1, seed=0)


@pytest.mark.parametrize('settings', [A2C, PPO, A3C, APPO], ids=['a2c', 'ppo', 'a3c', 'appo'])
def test_learns_cartpole(tmp_path, settings):
    config = config_lib.AccelConfig(
        env_config=gym_envs.GymConfig('CartPole-v1'), network='mlp', num_workers=1,
        learning_rate_scaling='none', log_every_seconds=60.0, **settings)
    config.validate()
    accel_main.train(config, str(tmp_path), make_pool=lambda config, seed: pools.SerialPool(
        config.env_config, config.num_envs, seed=seed))
    learner = learners.build_learner(config)
    checkpoint = tf.train.Checkpoint(model=learner.model)
    checkpoint.restore(tf.train.latest_checkpoint(str(tmp_path / 'checkpoints'))).expect_partial()
    scores = evaluate.run_episodes(config.env_config, lambda obs: learner.act(obs).numpy(),
                                   num_episodes=20, seed=99)
    print(f"{settings['algorithm']} CartPole: mean {np.mean(scores):.1f} over 20 episodes")
    assert np.mean(scores) >= 400
