"""AleVectorPool: ale_py's AtariVectorEnv (native C++ threads) behind the pools' batched API.

ale_py resizes in C++ with area interpolation only; for AtariConfig.resize 'linear' or 'nearest'
it hands over the pooled 210x160 frames and the pool resizes and stacks them here, as AtariEnv
does (common/envs/atari.py), so that each preset keeps its paper's frames.
"""
import cv2
import numpy as np

from common.envs.atari import (AtariConfig, CV2_INTERPOLATIONS, RAW_SCREEN_SHAPE,
                               nearest_indices)
from common.envs.pool_base import EnvPool, StepResult, _check_common, _check_int


class AleVectorPool(EnvPool):
    """ale_py's AtariVectorEnv (C++ threads) with the same StepResult semantics as the others."""

    @staticmethod
    def validate(atari_config: AtariConfig, num_envs: int, seed: int = 0,
                 num_threads: int = 0) -> None:
        """Raise ValueError for arguments __init__ would reject, starting nothing."""
        if not isinstance(atari_config, AtariConfig):
            raise ValueError(f'atari_config={atari_config!r}; AleVectorPool runs AtariConfig only')
        _check_common(atari_config, num_envs, seed)
        _check_int('num_threads', num_threads, 0)
        if atari_config.variant != 'nature':
            raise ValueError(f'AtariConfig.variant={atari_config.variant!r} is not supported '
                             "by AleVectorPool (no crop/downsample there); allowed: 'nature'")
        if atari_config.resolved_decorrelation_steps:
            raise ValueError(f'AtariConfig.decorrelation_steps='
                             f'{atari_config.decorrelation_steps!r} is not supported by '
                             'AleVectorPool; allowed: None or 0')

    def __init__(self, atari_config: AtariConfig, num_envs: int, seed: int = 0,
                 num_threads: int = 0):
        self.validate(atari_config, num_envs, seed, num_threads)
        self._describe(atari_config, num_envs)
        self._config = atari_config
        from ale_py.vector_env import AtariVectorEnv  # pylint: disable=import-outside-toplevel
        # Resized (and stacked) here when ale_py's C++ area resize is not the preset's.
        self._resizes_here = atari_config.resize != 'area'
        height, width = RAW_SCREEN_SHAPE if self._resizes_here else atari_config.screen_size
        max_frames = atari_config.max_episode_steps * atari_config.frame_skip
        self._env = AtariVectorEnv(
            atari_config.game, num_envs, num_threads=num_threads,
            autoreset_mode='SameStep',
            img_height=height, img_width=width, grayscale=True,
            stack_num=1 if self._resizes_here else atari_config.stack,
            frameskip=atari_config.frame_skip,
            maxpool=atari_config.max_pool, noop_max=atari_config.noop_max,
            # Its episodic_life resets the game on a life loss; life_loss_info only reports it
            # as a termination, which is what episodic_life means here.
            episodic_life=False, life_loss_info=atari_config.episodic_life,
            # Clipped here, so that episode returns can stay the unclipped score.
            reward_clipping=False,
            use_fire_reset=atari_config.presses_fire,
            max_num_frames_per_episode=min(max_frames or 2**31 - 1, 2**31 - 1),
            repeat_action_probability=float(atari_config.repeat_action_probability),
            full_action_space=atari_config.full_action_space)
        self._seed = seed
        self._actions = np.zeros(num_envs, np.int32)
        self._observations = np.zeros((num_envs, *self.observation_shape), np.uint8)
        self._rewards = np.zeros(num_envs, np.float32)
        self._episode_returns = np.zeros(num_envs, np.float32)
        self._episode_lengths = np.zeros(num_envs, np.int32)
        self._running_returns = np.zeros(num_envs, np.float64)
        self._running_lengths = np.zeros(num_envs, np.int32)
        self._lives = np.zeros(num_envs, np.int32)
        if self._resizes_here:
            self._resize = _resizer(atari_config)
            # (N, stack, H, W), oldest frame first, as the C++ stacks are.
            self._stacks = np.zeros((num_envs, atari_config.stack) + tuple(
                atari_config.screen_size), np.uint8)

    def _stack_here(self, frames: np.ndarray, restarted) -> np.ndarray:
        """Pooled raw frames (N, 1, 210, 160) -> the (N, stack, H, W) stacks, each newest frame
        resized; `restarted` (a bool per env, or True for all) zeroes the older frames, as the
        C++ stacks start an episode."""
        stacks = self._stacks
        stacks[:, :-1] = stacks[:, 1:].copy()
        stacks[restarted, :-1] = 0
        for frame, target in zip(frames, stacks):
            self._resize(frame[0], target[-1])
        return stacks

    def _to_channel_last(self, observations: np.ndarray) -> None:
        """(N, stack, H, W) -> the pool's (N, H, W, stack) buffer."""
        # cv2.merge per env is ~13x faster than numpy's strided transposing copy.
        if self.observation_shape[-1] == 1:
            self._observations.reshape(observations.shape)[:] = observations
            return
        for source, target in zip(observations, self._observations):
            cv2.merge(list(source), target)

    def reset(self) -> np.ndarray:
        if self._env is None:
            raise RuntimeError('the pool is closed')
        # Seeds env i with seed + i on the first reset only, like the other pools' envs.
        observations, info = self._env.reset(seed=self._seed)
        self._seed = None
        if self._resizes_here:
            observations = self._stack_here(observations, True)
        self._to_channel_last(observations)
        self._lives[:] = info['lives']
        self._running_returns.fill(0)
        self._running_lengths.fill(0)
        self._was_reset = True
        return self._observations

    def step(self, actions) -> StepResult:
        if self._env is None:
            raise RuntimeError('the pool is closed')
        self._write_actions(actions, self._actions)
        observations, raw_rewards, terminations, truncations, info = self._env.step(
            self._actions)
        lives = info['lives']
        terminals = terminations | truncations
        if self._config.episodic_life:
            # A life loss terminates without a reset (lives go down); at game over the env is
            # already reset, so lives are back up (or stay 0 in games without lives).
            dones = truncations | (terminations & (lives >= self._lives))
        else:
            dones = terminals
        if self._resizes_here:
            # Same-step autoreset: where an episode ended, the frame is the next one's first.
            observations = self._stack_here(observations, dones)
        self._to_channel_last(observations)
        self._lives[:] = lives
        self._running_returns += raw_rewards
        self._running_lengths += 1
        self._episode_returns[dones] = self._running_returns[dones]
        self._episode_lengths[dones] = self._running_lengths[dones]
        self._running_returns[dones] = 0
        self._running_lengths[dones] = 0
        if self._config.clip_rewards:
            np.clip(raw_rewards, -1, 1, out=self._rewards, casting='unsafe')
        else:
            self._rewards[:] = raw_rewards
        return StepResult(self._observations, self._rewards, terminals, dones,
                          self._episode_returns, self._episode_lengths)

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            # Dropping the last reference joins ALE's C++ threads.
            self._env = None


def _resizer(config: AtariConfig):
    """A function (pooled 210x160 frame, target H x W) that shrinks it as AtariEnv does."""
    if config.resize == 'nearest':
        pick = nearest_indices(RAW_SCREEN_SHAPE, config.screen_size)

        def resize(frame, target):
            target[:] = frame[pick]
        return resize
    interpolation = CV2_INTERPOLATIONS[config.resize]
    height, width = config.screen_size

    def resize(frame, target):
        cv2.resize(frame, (width, height), dst=target, interpolation=interpolation)
    return resize
