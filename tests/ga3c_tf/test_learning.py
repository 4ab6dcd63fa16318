"""GA3C learns CartPole: mean return >= 400 over 20 episodes within a fixed step budget."""
import gin
import pytest

import common  # noqa: F401
from common.envs import gym as gym_envs
from ga3c_tf import config as config_lib
from ga3c_tf import learner as learner_lib
from ga3c_tf import loop


@pytest.mark.slow
def test_ga3c_learns_cartpole(tmp_path, kept_checkpoint_scores):
    # Asynchronous, so no two runs are alike. At learning rate 0.006 over 120k steps one CI run
    # in a few collapsed to ~100. With RMSProp's mean squares starting at ones (TF1's), 0.003
    # over 150k steps failed 2 runs of 15 (means 383, 245); over 200k, 6 of 6 passed (lowest
    # mean 459) in ~65 s. Judged as the asynchronous accelerated methods are
    # (tests/accel_tf/test_learning.py): checkpoints every 50k steps, and one of the kept three
    # must reach the mean, so one late collapse is not a failure. Under that rule 150k steps
    # (50k, 100k, 150k kept) passed 15 runs of 15 (2026-12-03, a 2-core Zen 1, two at a time as
    # the suite's -n 2 runs them; the best checkpoint 500.0 in 8 of the 9 recorded, 485.7 in the
    # other): the budget, a quarter less time than 200k.
    config = config_lib.GA3CConfig(
        env_config=gym_envs.GymConfig('CartPole-v1'), network='mlp', num_agents=8,
        num_predictors=2, num_trainers=2, dynamic_settings=False, training_min_batch_size=0,
        learning_rate=0.003, final_learning_rate=0.0, total_steps=150_000, clip_norm=40.0,
        log_every_seconds=30.0, checkpoint_every_steps=50_000, seed=1)
    config.validate()
    loop.train(config, str(tmp_path))
    learner = learner_lib.build_learner(config)
    scores = kept_checkpoint_scores(learner, config.env_config, tmp_path)
    print(f'learning: GA3C CartPole mean over 20 episodes by checkpoint step {scores}')
    assert len(scores) == 3, scores
    assert max(scores.values()) >= 400, scores
    gin.clear_config()
