"""Samplers: the synchronized and alternating schedules give the same rollouts, in place."""
import numpy as np
import pytest

from common.envs import atari
from common.envs import gym as gym_envs
from common.envs import pools
from common.units import samplers

SMALL_PONG = atari.AtariConfig(game='pong', noop_max=5)


def _deterministic_policy(num_actions):
    """An action from the pixels alone, so both schedules act alike on the same states."""
    def policy(observations):
        flat = observations.reshape(len(observations), -1).astype(np.int64)
        return (flat.sum(axis=1) % num_actions).astype(np.int32)
    return policy


def _collect(sampler, policy, rollouts):
    copies = []
    for _ in range(rollouts):
        episodes = sampler.collect(policy)
        rollout = sampler.rollout
        copies.append((rollout.observations.copy(), rollout.actions.copy(),
                       rollout.rewards.copy(), rollout.terminals.copy(), episodes,
                       rollout.dones.copy()))
    return copies


@pytest.mark.slow
def test_synchronized_and_alternating_samplers_give_identical_trajectories():
    """Stooke & Abbeel's alternating schedule changes when actions are computed, not which."""
    policy = _deterministic_policy(SMALL_PONG.num_actions())
    with pools.ProcessPool(SMALL_PONG, 4, num_workers=2, seed=11) as pool:
        synchronized = _collect(samplers.make_sampler('synchronized', pool, 5), policy, 3)
    with pools.ProcessPool(SMALL_PONG, 4, num_workers=2, seed=11, num_groups=2) as pool:
        alternating = _collect(samplers.make_sampler('alternating', pool, 5), policy, 3)
    for first, second in zip(synchronized, alternating):
        for array, other in zip(first[:4] + first[5:], second[:4] + second[5:]):
            np.testing.assert_array_equal(array, other)
        assert first[4] == second[4]
    assert len({int(actions.sum()) for _, actions, *_ in synchronized}) > 1  # not all alike


@pytest.mark.slow
def test_alternating_over_ale_vector_groups_gives_the_synchronized_rollouts():
    """The same over ale_py's vector env: two AleVectorPool groups, env i still seeded seed + i
    (random no-op starts included)."""
    policy = _deterministic_policy(SMALL_PONG.num_actions())
    with pools.AleVectorPool(SMALL_PONG, 4, seed=11, num_threads=1) as pool:
        synchronized = _collect(samplers.make_sampler('synchronized', pool, 5), policy, 3)
    with pools.make_pool(SMALL_PONG, 4, seed=11, kind='ale_vector', num_threads=1,
                         num_groups=samplers.num_groups('alternating')) as pool:
        alternating = _collect(samplers.make_sampler('alternating', pool, 5), policy, 3)
    for first, second in zip(synchronized, alternating):
        for array, other in zip(first[:4] + first[5:], second[:4] + second[5:]):
            np.testing.assert_array_equal(array, other)
        assert first[4] == second[4]


def test_a_rollout_continues_where_the_last_one_ended_and_matches_stepping_by_hand():
    config = gym_envs.GymConfig('CartPole-v1')
    policy = _deterministic_policy(2)
    with pools.SerialPool(config, 3, seed=4) as pool:
        sampler = samplers.make_sampler('synchronized', pool, 4)
        first = _collect(sampler, policy, 1)[0]
        second = _collect(sampler, policy, 1)[0]
    np.testing.assert_array_equal(second[0][0], first[0][-1])
    with pools.SerialPool(config, 3, seed=4) as replay:
        observation = replay.reset()
        for rollout in (first, second):
            np.testing.assert_array_equal(rollout[0][0], observation)
            for step in range(4):
                actions = policy(observation)
                np.testing.assert_array_equal(actions, rollout[1][step])
                result = replay.step(actions)
                np.testing.assert_array_equal(result.rewards, rollout[2][step])
                np.testing.assert_array_equal(result.terminals, rollout[3][step])
                np.testing.assert_array_equal(result.dones, rollout[5][step])
                observation = result.observations.copy()
                np.testing.assert_array_equal(observation, rollout[0][step + 1])


def test_finished_episodes_are_returned_once_with_their_scores():
    config = gym_envs.GymConfig('CartPole-v1')
    with pools.SerialPool(config, 2, seed=0) as pool:
        sampler = samplers.make_sampler('synchronized', pool, 50)
        episodes = sampler.collect(lambda observations: np.zeros(len(observations), np.int32))
        parts = sampler.take_part_seconds()
    # Always pushing left ends CartPole within about 10 steps: several episodes per env.
    assert len(episodes) >= 4
    assert all(score == length and 5 <= length <= 30 for score, length in episodes)
    assert set(parts) == {'env', 'act'} and parts['env'] > 0


def test_the_alternating_sampler_needs_two_pool_groups():
    with pools.SerialPool(gym_envs.GymConfig('CartPole-v1'), 2) as pool:
        with pytest.raises(ValueError, match='num_groups=2'):
            samplers.make_sampler('alternating', pool, 5)
        with pytest.raises(ValueError, match="'gpu'"):
            samplers.make_sampler('gpu', pool, 5)
    assert samplers.num_groups('alternating') == 2 and samplers.num_groups('synchronized') == 1
