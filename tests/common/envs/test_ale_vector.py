"""AleVectorPool: ale_py's C++ vector env gives AtariEnv's frames, for every resize."""
import numpy as np
import pytest

from common.envs.atari import RESIZES, AtariConfig
from common.envs.pools import AleVectorPool, SerialPool


def _random_actions(num_steps, num_envs, num_actions):
    return np.random.default_rng(0).integers(0, num_actions, (num_steps, num_envs))


@pytest.mark.parametrize('resize', RESIZES)
def test_frames_match_atari_env_without_random_starts(resize):
    # No no-ops and no sticky actions: both pools play the same deterministic game, so every
    # observation (resized here or in C++, stacked, zero-padded after an episode's end) agrees.
    config = AtariConfig(game='pong', resize=resize, noop_max=0, fire_reset=False, stack=3,
                         max_episode_steps=60)
    vector, serial = AleVectorPool(config, 2, num_threads=2), SerialPool(config, 2)
    try:
        np.testing.assert_array_equal(vector.reset(), serial.reset())
        ended = 0
        for step_actions in _random_actions(130, 2, config.num_actions()):
            expected, actual = serial.step(step_actions), vector.step(step_actions)
            for name in ('observations', 'rewards', 'terminals', 'dones'):
                np.testing.assert_array_equal(getattr(actual, name), getattr(expected, name),
                                              err_msg=f'{resize}: {name}')
            ended += int(expected.dones.sum())
        assert ended == 4  # two episode ends each, at the 60-step cap, crossed above
    finally:
        vector.close()
        serial.close()


def test_frames_resized_here_are_the_requested_shape():
    config = AtariConfig(game='breakout', resize='linear', screen_size=(64, 48), stack=2,
                         episodic_life=True)
    pool = AleVectorPool(config, 3, num_threads=1)
    try:
        observations = pool.reset()
        assert observations.shape == (3, 64, 48, 2) and not observations[..., 0].any()
        for step_actions in _random_actions(40, 3, config.num_actions()):
            result = pool.step(step_actions)
        assert result.observations.shape == (3, 64, 48, 2)
        assert result.observations[..., 0].any(axis=(1, 2)).all()
    finally:
        pool.close()
