"""Any gymnasium environment with a Discrete action space, behind the AtariEnv interface."""
import dataclasses
import functools

import gin
import gymnasium
import numpy as np

from common.system import field_types

__all__ = ('GymConfig', 'GymEnv')


@functools.lru_cache(maxsize=None)
def _spaces(env_id: str) -> tuple:
    """(observation shape, observation dtype, action space) of env_id, made once per process."""
    env = gymnasium.make(env_id)
    try:
        space = env.observation_space
        return tuple(space.shape), np.dtype(space.dtype), env.action_space
    finally:
        env.close()


@gin.configurable
@dataclasses.dataclass(frozen=True)
class GymConfig:
    """Which gymnasium environment to run; picklable, as it is sent to worker processes."""
    env_id: str = 'CartPole-v1'
    max_episode_steps: int = 0  # 0 = the env's registered limit

    def validate(self) -> None:
        """Raise ValueError naming the bad field, before any process starts."""
        type_error = field_types.first_type_error('GymConfig', self)
        if type_error:
            raise ValueError(type_error)
        steps = self.max_episode_steps
        if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) or steps < 0:
            raise ValueError(f'GymConfig.max_episode_steps={steps!r}; must be an int >= 0 '
                             '(0 = the registered limit)')
        try:
            gymnasium.spec(self.env_id)
        except gymnasium.error.Error as error:
            raise ValueError(f'GymConfig.env_id={self.env_id!r} is not a registered gymnasium '
                             f'env ({error}); list them with gymnasium.pprint_registry()') from None
        action_space = _spaces(self.env_id)[2]
        if not isinstance(action_space, gymnasium.spaces.Discrete):
            raise ValueError(f'GymConfig.env_id={self.env_id!r} has action space {action_space}; '
                             'only Discrete action spaces are supported')

    @property
    def observation_shape(self) -> tuple:
        return _spaces(self.env_id)[0]

    @property
    def observation_dtype(self) -> np.dtype:
        return _spaces(self.env_id)[1]

    def num_actions(self) -> int:
        return int(_spaces(self.env_id)[2].n)

    def make(self, seed: int) -> 'GymEnv':
        return GymEnv(self, seed)


class GymEnv:
    """A gymnasium env: reset() / step(action) -> (obs, reward, terminal, done), as AtariEnv.
    rgb_frames=True makes it with render_mode='rgb_array', so rgb_frame() draws its screen."""

    def __init__(self, config: GymConfig, seed: int, rgb_frames: bool = False):
        self.config = config
        self._env = gymnasium.make(config.env_id,
                                   max_episode_steps=config.max_episode_steps or None,
                                   render_mode='rgb_array' if rgb_frames else None)
        if not isinstance(self._env.action_space, gymnasium.spaces.Discrete):
            raise ValueError(f'GymConfig.env_id={config.env_id!r} has action space '
                             f'{self._env.action_space}; only Discrete action spaces are supported')
        self.observation_shape = tuple(self._env.observation_space.shape)
        self.observation_dtype = np.dtype(self._env.observation_space.dtype)
        self.num_actions = int(self._env.action_space.n)
        self._seed = seed
        self.episode_return = 0.0
        self.episode_length = 0

    def reset(self) -> np.ndarray:
        """Start a new episode; the seed is used on the first reset only, as gymnasium wants."""
        observation, _ = self._env.reset(seed=self._seed)
        self._seed = None
        self.episode_return = 0.0
        self.episode_length = 0
        return np.asarray(observation, self.observation_dtype)

    def step(self, action: int):
        observation, reward, terminated, truncated, _ = self._env.step(int(action))
        reward = float(reward)
        self.episode_return += reward
        self.episode_length += 1
        # Truncation cuts bootstrapping too, as the original codes of the papers do.
        done = bool(terminated or truncated)
        return np.asarray(observation, self.observation_dtype), reward, done, done

    def rgb_frame(self) -> np.ndarray:
        """The env's current screen, (height, width, 3) uint8, as gymnasium renders it."""
        if self._env.render_mode != 'rgb_array':
            raise ValueError(f'GymEnv of {self.config.env_id!r} was made with rgb_frames=False; '
                             'make it with rgb_frames=True to draw its screen')
        return np.asarray(self._env.render(), np.uint8)

    def close(self) -> None:
        self._env.close()
