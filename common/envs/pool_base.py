"""What every environment pool shares: the batched StepResult, the EnvPool API, argument checks,
and the layout of a pool's arrays in one buffer (a bytearray or shared memory).
"""
import math
from typing import NamedTuple

import numpy as np

_ALIGNMENT = 64


class StepResult(NamedTuple):
    """One batched step; arrays are pool-owned and valid until the next step or reset."""
    observations: np.ndarray     # (N, *obs_shape); after a done, the next episode's first obs
    rewards: np.ndarray          # (N,) float32, clipped if the env config clips
    terminals: np.ndarray        # (N,) bool: bootstrapping is cut here
    dones: np.ndarray            # (N,) bool: the episode ended and the env was reset
    episode_returns: np.ndarray  # (N,) float32: unclipped score of the ended episode, where dones
    episode_lengths: np.ndarray  # (N,) int32: agent steps of the ended episode, where dones


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_int(name: str, value, minimum: int) -> None:
    if not _is_int(value) or value < minimum:
        raise ValueError(f'{name}={value!r}; must be an int >= {minimum}')


def _check_divides(num_envs: int, name: str, count: int) -> None:
    if num_envs % count:
        raise ValueError(f'num_envs={num_envs} is not a multiple of {name}={count}')


def _check_group(group, num_groups: int) -> None:
    """A pool's group index: an int in 0..num_groups - 1."""
    if not _is_int(group) or not 0 <= group < num_groups:
        raise ValueError(f'group={group!r}; allowed 0..{num_groups - 1}')


def _check_common(env_config, num_envs, seed) -> None:
    """Validate what every pool takes, before anything is started."""
    if not callable(getattr(env_config, 'validate', None)):
        raise ValueError(f'env_config={env_config!r}; must be an AtariConfig or GymConfig')
    env_config.validate()
    _check_int('num_envs', num_envs, 1)
    _check_int('seed', seed, 0)


def _layout(num_envs: int, observation_shape: tuple, observation_dtype) -> tuple:
    """[(field, shape, dtype, byte offset)] of a pool's arrays in one buffer, and its size."""
    fields = [('observations', (num_envs, *observation_shape), np.dtype(observation_dtype)),
              ('actions', (num_envs,), np.dtype(np.int32)),
              ('rewards', (num_envs,), np.dtype(np.float32)),
              ('terminals', (num_envs,), np.dtype(np.bool_)),
              ('dones', (num_envs,), np.dtype(np.bool_)),
              ('episode_returns', (num_envs,), np.dtype(np.float32)),
              ('episode_lengths', (num_envs,), np.dtype(np.int32))]
    layout, offset = [], 0
    for name, shape, dtype in fields:
        layout.append((name, shape, dtype, offset))
        size = math.prod(shape) * dtype.itemsize
        offset += -(-size // _ALIGNMENT) * _ALIGNMENT
    return layout, max(offset, 1)


def _arrays(buffer, layout) -> dict:
    """Numpy views of the fields of `layout` over `buffer` (bytearray or shared memory)."""
    return {name: np.ndarray(shape, dtype, buffer=buffer, offset=offset)
            for name, shape, dtype, offset in layout}


def _result(arrays: dict, start: int = 0, stop=None) -> StepResult:
    return StepResult(*(arrays[name][start:stop] for name in StepResult._fields))


class _EnvSlice:
    """Envs [start, stop) of a pool, stepping into views of the pool's arrays."""

    def __init__(self, env_config, seed: int, start: int, stop: int, arrays: dict):
        self.envs = [env_config.make(seed + index) for index in range(start, stop)]
        self.observations = arrays['observations'][start:stop]
        self.actions = arrays['actions'][start:stop]
        self.rewards = arrays['rewards'][start:stop]
        self.terminals = arrays['terminals'][start:stop]
        self.dones = arrays['dones'][start:stop]
        self.episode_returns = arrays['episode_returns'][start:stop]
        self.episode_lengths = arrays['episode_lengths'][start:stop]

    def reset(self) -> None:
        for index, env in enumerate(self.envs):
            self.observations[index] = env.reset()
        self.rewards.fill(0)
        self.terminals.fill(False)
        self.dones.fill(False)

    def step(self) -> None:
        rewards, terminals, dones = [], [], []
        for index, (env, action) in enumerate(zip(self.envs, self.actions.tolist())):
            observation, reward, terminal, done = env.step(action)
            if done:
                self.episode_returns[index] = env.episode_return
                self.episode_lengths[index] = env.episode_length
                observation = env.reset()
            self.observations[index] = observation
            rewards.append(reward)
            terminals.append(terminal)
            dones.append(done)
        self.rewards[:] = rewards
        self.terminals[:] = terminals
        self.dones[:] = dones

    def close(self) -> None:
        for env in self.envs:
            env.close()
        self.envs = []


class EnvPool:
    """num_envs envs stepped together: reset() -> observations, step(actions) -> StepResult."""
    num_envs: int
    observation_shape: tuple
    observation_dtype: np.dtype
    num_actions: int

    def _describe(self, env_config, num_envs: int) -> None:
        self.num_envs = num_envs
        self.observation_shape = tuple(env_config.observation_shape)
        self.observation_dtype = np.dtype(env_config.observation_dtype)
        self.num_actions = env_config.num_actions()
        self._was_reset = False

    def _write_actions(self, actions, out: np.ndarray) -> None:
        """Check actions (shape, integer, in range) and copy them into `out`."""
        if not self._was_reset:
            raise RuntimeError('call reset() before step()')
        actions = np.asarray(actions)
        if actions.shape != out.shape or actions.dtype.kind not in 'iu':
            raise ValueError(f'actions of shape {actions.shape} and dtype {actions.dtype}; '
                             f'expected integers of shape {out.shape}')
        if actions.size and (actions.min() < 0 or actions.max() >= self.num_actions):
            raise ValueError(f'actions {actions.min()}..{actions.max()} out of range; '
                             f'allowed 0..{self.num_actions - 1}')
        out[:] = actions

    def reset(self) -> np.ndarray:
        raise NotImplementedError

    def step(self, actions) -> StepResult:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


class GroupedPool(EnvPool):
    """A pool whose envs form num_groups contiguous blocks that step apart (step_async /
    step_wait), for the alternating sampler; step() steps them all."""
    num_groups: int
    _stepping: list  # per group: sent and not yet waited for
    _arrays: dict
    _result: StepResult

    def _check_open(self) -> None:
        raise NotImplementedError

    def _group_actions(self, group: int) -> np.ndarray:
        """The view of the actions buffer that group `group`'s envs step on."""
        raise NotImplementedError

    def _send_group(self, group: int) -> None:
        """Starts group `group` stepping on its actions, already checked and in the buffer."""
        raise NotImplementedError

    def _wait_group(self, group: int) -> StepResult:
        """Waits for group `group`'s step (sent); the StepResult of its slice of envs."""
        raise NotImplementedError

    def _check_ready(self, group) -> None:
        self._check_open()
        _check_group(group, self.num_groups)
        if self._stepping[group]:
            raise RuntimeError(f'group {group} is already stepping; call step_wait({group})')

    def step_async(self, actions, group: int = 0) -> None:
        """Start stepping group `group`'s envs with `actions` (num_envs / num_groups of them)."""
        self._check_ready(group)
        self._write_actions(actions, self._group_actions(group))
        self._send_group(group)

    def step_wait(self, group: int = 0) -> StepResult:
        """Wait for group `group`'s step; returns the StepResult of its slice of envs."""
        self._check_open()
        _check_group(group, self.num_groups)
        if not self._stepping[group]:
            raise RuntimeError(f'step_wait({group}) without step_async(actions, {group})')
        try:
            return self._wait_group(group)
        finally:
            self._stepping[group] = False

    def step(self, actions) -> StepResult:
        for group in range(self.num_groups):
            self._check_ready(group)
        # The whole batch is checked before any group is sent, so a bad action steps none.
        self._write_actions(actions, self._arrays['actions'])
        for group in range(self.num_groups):
            self._send_group(group)
        for group in range(self.num_groups):
            self.step_wait(group)
        return self._result
