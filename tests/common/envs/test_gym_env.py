"""GymEnv: the AtariEnv interface over gymnasium (CartPole)."""
import numpy as np
import pytest

from common.envs.gym import GymConfig


def _observations(seed: int, num_steps: int = 30) -> np.ndarray:
    env = GymConfig().make(seed)
    observations = [env.reset()]
    for step in range(num_steps):
        observation, _, _, done = env.step(step % 2)
        observations.append(env.reset() if done else observation)
    return np.array(observations)


def test_cartpole_shapes_and_dtypes():
    config = GymConfig()
    config.validate()
    env = config.make(0)
    assert config.observation_shape == env.observation_shape == (4,)
    assert config.observation_dtype == env.observation_dtype == np.float32
    assert config.num_actions() == env.num_actions == 2
    observation = env.reset()
    assert observation.shape == (4,) and observation.dtype == np.float32
    observation, reward, terminal, done = env.step(0)
    assert observation.dtype == np.float32 and isinstance(reward, float)
    assert isinstance(terminal, bool) and isinstance(done, bool)


def test_seeding_is_deterministic():
    np.testing.assert_array_equal(_observations(3), _observations(3))
    assert not np.array_equal(_observations(3), _observations(4))


def test_terminal_and_done_at_episode_end():
    env = GymConfig().make(0)
    env.reset()
    total = 0.0
    for step in range(1, 501):
        _, reward, terminal, done = env.step(0)
        total += reward
        assert terminal == done
        if done:
            break
    assert done and env.episode_length == step and env.episode_return == total


def test_max_episode_steps_truncates_as_terminal():
    env = GymConfig(max_episode_steps=5).make(0)
    env.reset()
    results = [env.step(step % 2)[2:] for step in range(5)]
    assert results == [(False, False)] * 4 + [(True, True)]


@pytest.mark.parametrize('config, message', [
    (GymConfig(env_id='NoSuchEnv-v0'), "'NoSuchEnv-v0'"),
    (GymConfig(env_id='Pendulum-v1'), 'Discrete'),
    (GymConfig(max_episode_steps=-1), 'max_episode_steps=-1'),
])
def test_validation_names_the_bad_value(config, message):
    with pytest.raises(ValueError, match=message):
        config.validate()
