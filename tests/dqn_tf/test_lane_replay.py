"""A fast DQN lane's staged steps, moved into replay, rebuild exactly the stacks the actor acted
on: across lost lives (restarted or continued stacks, FIRE after a lost life or not) and game
ends, on Breakout, which has lives and FIRE."""
import types

import numpy as np
import pytest

from common.envs.atari import AtariConfig
from common.replay.replay import ReplayMemory
from dqn_tf.actors import Lane

STEPS = 700


def _breakout(**life_handling):
    return AtariConfig(game='breakout', episodic_life=True, fire_reset=True,
                       screen_size=(42, 42), resize='linear', max_episode_steps=300,
                       **life_handling)


def _mismatched_steps(config):
    """Random play through a Lane into replay: (steps whose rebuilt stack differs from the one
    acted on, lives lost, games ended)."""
    replay = ReplayMemory(STEPS, config.observation_shape, config.observation_dtype,
                          config.stack)
    fast_dqn = types.SimpleNamespace(staging_length=STEPS, replay=replay,
                                     config=types.SimpleNamespace(env_config=config))
    lane = Lane(0, fast_dqn, seed=0)
    env, rng = config.make(1), np.random.default_rng(1)
    observation = env.reset().copy()  # the env's stack is its own buffer, as actors copy it
    acted, lives_lost, games = [], 0, 0
    for _ in range(STEPS):
        action = int(rng.integers(env.num_actions))
        acted.append(observation)
        next_observation, reward, terminal, done = env.step(action)
        lane.record(fast_dqn, observation, action, reward, terminal, done)
        lives_lost += int(terminal and not done)
        games += int(done)
        observation = (env.reset() if done else next_observation).copy()
    lane.staging.flush_into(replay, 0)
    rebuilt = replay.stacked(np.zeros(STEPS, np.int64), np.arange(STEPS))
    mismatched = [step for step in range(STEPS) if not np.array_equal(rebuilt[step], acted[step])]
    return mismatched, lives_lost, games


@pytest.mark.parametrize('life_handling', [
    dict(life_loss_restarts_stack=True),                           # gin/dqn/paper.gin
    dict(life_loss_restarts_stack=True, fire_on_life_loss=True),   # baselines' wrap_deepmind
    dict(),                                                        # the stack goes on
])
def test_replay_rebuilds_the_stacks_the_actor_acted_on(life_handling):
    config = _breakout(**life_handling)
    config.validate()
    mismatched, lives_lost, games = _mismatched_steps(config)
    assert lives_lost >= 3 and games >= 1
    assert not mismatched


def test_fire_after_a_lost_life_without_the_restart_breaks_the_rebuilt_stacks():
    """Why validate() refuses it (the fast DQN preset before 2026-12-06): FIRE's frame is pushed
    in the same step as the lost life's, and replay keeps one frame per step."""
    with pytest.raises(ValueError, match='needs AtariConfig.life_loss_restarts_stack=True'):
        _breakout(fire_on_life_loss=True).validate()
    mismatched, lives_lost, _ = _mismatched_steps(_breakout(fire_on_life_loss=True))
    assert len(mismatched) >= lives_lost >= 3
