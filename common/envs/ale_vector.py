"""AleVectorPool: ale_py's AtariVectorEnv (native C++ threads) behind the pools' batched API.

ale_py resizes in C++ with area interpolation only; for AtariConfig.resize 'linear' or 'nearest'
it hands over the pooled 210x160 frames and the pool resizes and stacks them here, as AtariEnv
does (common/envs/atari.py), so that each preset keeps its paper's frames.
"""
import cv2
import numpy as np

from common.envs.atari import (AtariConfig, CV2_INTERPOLATIONS, RAW_SCREEN_SHAPE,
                               nearest_indices)
from common.envs.pool_base import (GroupedPool, StepResult, _arrays, _check_common, _check_divides,
                                   _check_int, _layout, _result)


class AleVectorPool(GroupedPool):
    """ale_py's AtariVectorEnv (C++ threads) with the same StepResult semantics as the others.

    With num_groups > 1 the envs are split into that many AtariVectorEnvs (env i still seeded
    seed + i), each with its own C++ threads, so that one group steps (step_async / step_wait,
    as ProcessPool's groups) while the caller acts on another's observations: the alternating
    sampler (Stooke & Abbeel, section 4.1)."""

    @staticmethod
    def validate(atari_config: AtariConfig, num_envs: int, seed: int = 0,
                 num_threads: int = 0, num_groups: int = 1) -> None:
        """Raise ValueError for arguments __init__ would reject, starting nothing."""
        if not isinstance(atari_config, AtariConfig):
            raise ValueError(f'atari_config={atari_config!r}; AleVectorPool runs AtariConfig only')
        _check_common(atari_config, num_envs, seed)
        _check_int('num_threads', num_threads, 0)
        _check_int('num_groups', num_groups, 1)
        _check_divides(num_envs, 'num_groups', num_groups)
        if atari_config.variant != 'nature':
            raise ValueError(f'AtariConfig.variant={atari_config.variant!r} is not supported '
                             "by AleVectorPool (no crop/downsample there); allowed: 'nature'")
        if atari_config.fire_on_life_loss:
            raise ValueError('AtariConfig.fire_on_life_loss=True is not supported by '
                             "AleVectorPool (ale_py's vector env presses FIRE at a game's start "
                             'only); allowed: False')
        if atari_config.life_loss_restarts_stack and atari_config.resize == 'area':
            raise ValueError("AtariConfig.life_loss_restarts_stack=True with resize='area' is "
                             "not supported by AleVectorPool (ale_py's C++ stacks restart at a "
                             "reset only); allowed: resize 'nearest' or 'linear', stacked here")
        if atari_config.resolved_decorrelation_steps:
            raise ValueError(f'AtariConfig.decorrelation_steps='
                             f'{atari_config.decorrelation_steps!r} is not supported by '
                             'AleVectorPool; allowed: None or 0')

    def __init__(self, atari_config: AtariConfig, num_envs: int, seed: int = 0,
                 num_threads: int = 0, num_groups: int = 1):
        self.validate(atari_config, num_envs, seed, num_threads, num_groups)
        self._describe(atari_config, num_envs)
        self._config = atari_config
        self.num_groups = num_groups
        size = num_envs // num_groups
        self._slices = [slice(group * size, (group + 1) * size) for group in range(num_groups)]
        # Resized (and stacked) here when ale_py's C++ area resize is not the preset's.
        self._resizes_here = atari_config.resize != 'area'
        self._seed = int(seed)
        layout, nbytes = _layout(num_envs, self.observation_shape, self.observation_dtype)
        self._arrays = _arrays(bytearray(nbytes), layout)
        self._result = _result(self._arrays)
        self._group_results = [_result(self._arrays, group.start, group.stop)
                               for group in self._slices]
        self._stepping = [False] * num_groups
        self._running_returns = np.zeros(num_envs, np.float64)
        self._running_lengths = np.zeros(num_envs, np.int32)
        self._lives = np.zeros(num_envs, np.int32)
        if self._resizes_here:
            self._resize = _resizer(atari_config)
            # (N, stack, H, W), oldest frame first, as the C++ stacks are.
            self._stacks = np.zeros((num_envs, atari_config.stack) + tuple(
                atari_config.screen_size), np.uint8)
        # The vector envs last: nothing after them can fail and leave their C++ threads running.
        self._envs = []
        try:
            for _ in range(num_groups):
                self._envs.append(self._vector_env(size, num_threads))
        except BaseException:
            self._envs.clear()  # dropping them joins their C++ threads
            raise

    def _vector_env(self, num_envs: int, num_threads: int):
        """One AtariVectorEnv of num_envs envs, as the AtariConfig asks."""
        from ale_py.vector_env import AtariVectorEnv  # pylint: disable=import-outside-toplevel
        config = self._config
        height, width = RAW_SCREEN_SHAPE if self._resizes_here else config.screen_size
        max_frames = config.max_episode_steps * config.frame_skip
        return AtariVectorEnv(
            config.game, num_envs, num_threads=num_threads,
            autoreset_mode='SameStep',
            img_height=height, img_width=width, grayscale=True,
            stack_num=1 if self._resizes_here else config.stack,
            frameskip=config.frame_skip,
            maxpool=config.max_pool, noop_max=config.noop_max,
            # Its episodic_life resets the game on a life loss; life_loss_info only reports it
            # as a termination, which is what episodic_life means here.
            episodic_life=False, life_loss_info=config.episodic_life,
            # Clipped here, so that episode returns can stay the unclipped score.
            reward_clipping=False,
            use_fire_reset=config.presses_fire,
            max_num_frames_per_episode=min(max_frames or 2**31 - 1, 2**31 - 1),
            repeat_action_probability=float(config.repeat_action_probability),
            full_action_space=config.full_action_space)

    def _observe(self, envs: slice, observations: np.ndarray, restarted) -> None:
        """Writes a group's observations (N, stack, H, W) from ale_py (or its pooled raw
        frames, resized and stacked here) into the pool's (N, H, W, stack) buffer."""
        if self._resizes_here:
            observations = self._stack_here(envs, observations, restarted)
        target = self._arrays['observations'][envs]
        # cv2.merge per env is ~13x faster than numpy's strided transposing copy.
        if self.observation_shape[-1] == 1:
            target.reshape(observations.shape)[:] = observations
            return
        for source, out in zip(observations, target):
            cv2.merge(list(source), out)

    def _stack_here(self, envs: slice, frames: np.ndarray, restarted) -> np.ndarray:
        """Pooled raw frames (N, 1, 210, 160) -> the (N, stack, H, W) stacks, each newest frame
        resized; `restarted` (a bool per env, or True for all) zeroes the older frames, as the
        C++ stacks start an episode."""
        stacks = self._stacks[envs]
        stacks[:, :-1] = stacks[:, 1:].copy()
        # A bare True would index a new axis (envs 0..N-2 zeroed whole, the last one kept).
        stacks[slice(None) if restarted is True else restarted, :-1] = 0
        for frame, target in zip(frames, stacks):
            self._resize(frame[0], target[-1])
        return stacks

    def _check_open(self) -> None:
        if not self._envs:
            raise RuntimeError('the pool is closed')

    def reset(self) -> np.ndarray:
        self._check_open()
        if any(self._stepping):
            raise RuntimeError('reset() while a step_async() is waiting for step_wait()')
        for envs, env in zip(self._slices, self._envs):
            # Seeds env i with seed + i on the first reset only, like the other pools' envs.
            observations, info = env.reset(
                seed=None if self._seed is None else self._seed + envs.start)
            self._observe(envs, observations, True)
            self._lives[envs] = info['lives']
        self._seed = None
        self._running_returns.fill(0)
        self._running_lengths.fill(0)
        self._was_reset = True
        return self._arrays['observations']

    def _group_actions(self, group: int) -> np.ndarray:
        return self._arrays['actions'][self._slices[group]]

    def _send_group(self, group: int) -> None:
        self._envs[group].send(self._group_actions(group))
        self._stepping[group] = True

    def _wait_group(self, group: int) -> StepResult:
        observations, raw_rewards, terminations, truncations, info = self._envs[group].recv()
        envs = self._slices[group]
        result = self._group_results[group]
        lives = info['lives']
        np.logical_or(terminations, truncations, out=result.terminals)
        if self._config.episodic_life:
            # A life loss terminates without a reset (lives go down); at game over the env is
            # already reset, so lives are back up (or stay 0 in games without lives).
            result.dones[:] = truncations | (terminations & (lives >= self._lives[envs]))
        else:
            result.dones[:] = result.terminals
        dones = result.dones
        # Same-step autoreset: where an episode ended, the frame is the next one's first; a lost
        # life restarts the stack too where the config says so.
        self._observe(envs, observations, result.terminals
                      if self._config.life_loss_restarts_stack else dones)
        self._lives[envs] = lives
        running_returns, running_lengths = self._running_returns[envs], self._running_lengths[envs]
        running_returns += raw_rewards
        running_lengths += 1
        result.episode_returns[dones] = running_returns[dones]
        result.episode_lengths[dones] = running_lengths[dones]
        running_returns[dones] = 0
        running_lengths[dones] = 0
        if self._config.clip_rewards:
            np.clip(raw_rewards, -1, 1, out=result.rewards, casting='unsafe')
        else:
            result.rewards[:] = raw_rewards
        return result

    def close(self) -> None:
        envs, self._envs = self._envs, []
        stepping, self._stepping = self._stepping, [False] * self.num_groups
        try:
            for group, env in enumerate(envs):
                if stepping[group]:
                    try:
                        env.recv()
                    finally:
                        env.close()
                else:
                    env.close()
        finally:
            # Dropping the last references joins ALE's C++ threads.
            envs.clear()


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
