"""One ALE game with the papers' preprocessing, stepping ale_py.ALEInterface directly.

gymnasium's Atari wrappers cost about a quarter of the throughput (32 envs over two worker
processes on 2 cores: 3,966 steps/s through the wrappers against 5,021 stepping ALEInterface
directly; docs/benchmarks/journal.md, 2026-11-22), so the frame skip, max-pooling, resizing
and stacking happen here, with numpy/cv2, into preallocated buffers.
"""
import dataclasses
import difflib
from typing import Optional

import ale_py
import cv2
import gin
import numpy as np

from common.envs.roms import FIRE, NOOP, action_set, has_lives, new_ale
from common.system import field_types

VARIANTS = ('nature', 'stooke')
# How 'nature' scales the pooled 210x160 frame to screen_size: 'area' averages the pixels each
# output pixel covers (cv2.INTER_AREA, the DQN family's); 'nearest' keeps the pixel at each output
# pixel's centre, (i + 0.5) * in / out, as scipy.misc.imresize(interp='nearest') does
# (alfredvc/paac atari_emulator.py): Pong's ball keeps its full brightness wherever it is;
# 'linear' interpolates the 2x2 input pixels around each output pixel's centre (cv2.INTER_LINEAR,
# as brett-daley/fast-dqn's atari_env.py with run_dqn.py's default --interp=linear).
RESIZES = ('area', 'nearest', 'linear')
CV2_INTERPOLATIONS = {'area': cv2.INTER_AREA, 'linear': cv2.INTER_LINEAR}
# How 'stooke' halves its cropped 208x160 frame to 104x80: 'average' takes the mean of each 2x2
# block, which is what the authors' code computes (rlpyt atari_env.py and accel_rl atari_env.py
# call cv2.resize(frame, (W, H), cv2.INTER_NEAREST): the third positional argument is dst, so
# the default INTER_LINEAR runs, and at exactly half it is the 2x2 mean); 'skip' keeps every
# second row and column (this project's frames until 2026-11-27).
DOWNSAMPLES = ('skip', 'average')
# Default start-up decorrelation per variant, where no preset sets it: 100 for the stooke frames
# (rlpyt's samplers' default, max_decorrelation_steps=100); Stooke & Abbeel's presets set 1000
# (gin/accel/atari.gin: rlpyt's Atari policy-gradient configs); the nature-family papers: none.
DEFAULT_DECORRELATION_STEPS = {'nature': 0, 'stooke': 100}
# Why a life-loss option needs another: a frame pushed by a FIRE after a lost life would be left
# out of the stacks a replay rebuilds from one newest frame per step, unless the stack restarts.
_LIFE_LOSS_WHY = {'life_loss_restarts_stack': ' (the FIRE frame after a lost life would be '
                  'missing from the stacks a replay rebuilds; restarting the stack keeps them equal)'}
RAW_SCREEN_SHAPE = (210, 160)
STOOKE_SCREEN_SHAPE = (104, 80)  # rows 1..208 of the raw screen, halved (downsample)


LIFE_LOSS_FIELDS = ('life_loss_restarts_stack', 'fire_on_life_loss')


def inert_fields(game: str) -> tuple:
    """AtariConfig fields that cannot change what an agent sees in game: those acting at a lost
    life, in a game without lives (Pong)."""
    return () if has_lives(game) else LIFE_LOSS_FIELDS


def fired_on_life_loss(recorded) -> bool:
    """What a config recorded before fire_on_life_loss existed (2026-12-06) did after a lost life,
    from its recorded fields ({name: value}): fire_reset pressed FIRE there too, where the life
    loss was terminal and the game has FIRE."""
    return bool(recorded.get('episodic_life') and recorded.get('fire_reset')
                and FIRE in action_set(recorded.get('game', 'pong'),
                                       bool(recorded.get('full_action_space', False))))


# Fields added after runs were recorded whose default is not what those runs did: how to read
# it from an old record's fields (common/system/gin_text.py, common/tools/reproduce.py).
RECORDED_BEFORE = {'fire_on_life_loss': fired_on_life_loss}


def stack_restarts_at_terminal(env_config) -> bool:
    """Whether env_config's frame stack restarts at every terminal, a lost life's too, so that
    a replay must start an episode after each (AtariConfig.life_loss_restarts_stack); other
    envs restart only when the game is reset (a done)."""
    return isinstance(env_config, AtariConfig) and env_config.life_loss_restarts_stack


def _is_int(value) -> bool:
    """True for real integers (bools excluded, numpy integers included)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def nearest_indices(in_shape, out_shape):
    """The (rows, columns) index grid that takes each output pixel from the input pixel under its
    centre: index (i + 0.5) * in / out, rounded down."""
    rows, cols = ((np.arange(out) * 2 + 1) * size // (2 * out)
                  for size, out in zip(in_shape, out_shape))
    return np.ix_(rows, cols)


@gin.configurable
@dataclasses.dataclass(frozen=True)
class AtariConfig:
    """What game and preprocessing to run; picklable, as it is sent to worker processes."""
    game: str = 'pong'                # ale_py ROM id, see ale_py.roms.get_all_rom_ids()
    variant: str = 'nature'           # 'nature': resize to screen_size (resize); 'stooke':
                                      # crop a row top and bottom, halve -> 104x80 (downsample)
    frame_skip: int = 4
    max_pool: bool = True             # pixel-wise max of the last two raw frames of each skip
    screen_size: tuple = (84, 84)     # (height, width), 'nature' only
    resize: str = 'area'              # 'area', 'nearest' or 'linear' (RESIZES), 'nature' only
    downsample: str = 'skip'          # 'skip' or 'average' (DOWNSAMPLES), 'stooke' only; the
                                      # default keeps runs recorded before the field as they ran
    stack: int = 4
    noop_max: int = 30                # each reset: uniform 1..noop_max no-op frames; 0 = none
    clip_rewards: bool = True         # to [-1, 1]; episode_return stays the game score
    episodic_life: bool = False       # a life loss is terminal (without a reset)
    life_loss_restarts_stack: bool = False  # episodic: a life loss also restarts the frame stack
                                      # (zeros before the newest frame), as a new game does
    fire_reset: bool = False          # press FIRE at a game's start, in games that have FIRE
    fire_on_life_loss: bool = False   # episodic, fire_reset: and after each lost life too
                                      # (baselines' wrap_deepmind); needs the stack restarted
    repeat_action_probability: float = 0.0  # sticky actions; 0 as in the papers
    max_episode_steps: int = 27000    # agent steps (108,000 frames); 0 = no cap
    decorrelation_steps: Optional[int] = None  # at the first reset, uniform 0..this many random
                                               # actions; None = 0 'nature', 100 'stooke'
    full_action_space: bool = False

    def __post_init__(self):
        # gin and YAML hand sequences over as lists; a tuple keeps the config hashable.
        if isinstance(self.screen_size, list):
            object.__setattr__(self, 'screen_size', tuple(self.screen_size))

    def validate(self) -> None:
        """Raise ValueError naming the first bad field, before any process starts."""
        type_error = field_types.first_type_error('AtariConfig', self)
        if type_error:
            raise ValueError(type_error)
        all_games = ale_py.roms.get_all_rom_ids()
        if self.game not in all_games:
            close = difflib.get_close_matches(str(self.game).lower().replace(' ', '_'),
                                              all_games, n=3, cutoff=0.5)
            hint = f'close ones: {", ".join(close)}; ' if close else ''
            raise ValueError(
                f'AtariConfig.game={self.game!r} is not an ale_py ROM id ({hint}list all with '
                f'ale_py.roms.get_all_rom_ids())')
        if self.variant not in VARIANTS:
            raise ValueError(f'AtariConfig.variant={self.variant!r}; allowed: {VARIANTS}')
        if self.resize not in RESIZES:
            raise ValueError(f'AtariConfig.resize={self.resize!r}; allowed: {RESIZES}')
        if self.resize != 'area' and self.variant != 'nature':
            raise ValueError(f'AtariConfig.resize={self.resize!r} needs variant=\'nature\' '
                             f'(variant {self.variant!r} is halved by downsample)')
        if self.downsample not in DOWNSAMPLES:
            raise ValueError(f'AtariConfig.downsample={self.downsample!r}; allowed: {DOWNSAMPLES}')
        if self.downsample != 'skip' and self.variant != 'stooke':
            raise ValueError(f'AtariConfig.downsample={self.downsample!r} needs variant=\'stooke\' '
                             f'(variant {self.variant!r} does not downsample by 2)')
        for name, minimum in (('frame_skip', 1), ('stack', 1), ('noop_max', 0),
                              ('max_episode_steps', 0)):
            value = getattr(self, name)
            if not _is_int(value) or value < minimum:
                raise ValueError(f'AtariConfig.{name}={value!r}; must be an int >= {minimum}')
        if self.decorrelation_steps is not None and (
                not _is_int(self.decorrelation_steps) or self.decorrelation_steps < 0):
            raise ValueError(f'AtariConfig.decorrelation_steps={self.decorrelation_steps!r}; '
                             'must be None or an int >= 0')
        size = self.screen_size
        if (not isinstance(size, tuple) or len(size) != 2
                or not all(_is_int(side) and side > 0 for side in size)):
            raise ValueError(f'AtariConfig.screen_size={size!r}; must be (height, width), '
                             'two positive ints')
        for name, needs in (('life_loss_restarts_stack', ('episodic_life',)),
                            ('fire_on_life_loss', ('episodic_life', 'fire_reset',
                                                   'life_loss_restarts_stack'))):
            missing = [need for need in needs if getattr(self, name) and not getattr(self, need)]
            if missing:
                raise ValueError(f'AtariConfig.{name}=True needs AtariConfig.{missing[0]}=True'
                                 + _LIFE_LOSS_WHY.get(missing[0], ''))
        probability = self.repeat_action_probability
        if not isinstance(probability, (int, float)) or not 0.0 <= probability <= 1.0:
            raise ValueError(f'AtariConfig.repeat_action_probability={probability!r}; '
                             'must be in [0, 1]')

    @property
    def observation_shape(self) -> tuple:
        """(height, width, stack) of one stacked uint8 observation."""
        height, width = STOOKE_SCREEN_SHAPE if self.variant == 'stooke' else self.screen_size
        return (height, width, self.stack)

    @property
    def presses_fire(self) -> bool:
        """fire_reset where the game has a FIRE action; games without one are left alone, as
        brett-daley/fast-dqn's atari_env.py and baselines' wrap_deepmind do."""
        return self.fire_reset and FIRE in action_set(self.game, self.full_action_space)

    @property
    def observation_dtype(self):
        return np.uint8

    @property
    def resolved_decorrelation_steps(self) -> int:
        """decorrelation_steps with None replaced by the variant's default."""
        if self.decorrelation_steps is None:
            return DEFAULT_DECORRELATION_STEPS[self.variant]
        return self.decorrelation_steps

    @staticmethod
    def value_before(name: str, recorded):
        """What a run recorded before field name existed ran with (recorded: its fields), where
        that is not the field's default; dataclasses.MISSING elsewhere."""
        before = RECORDED_BEFORE.get(name)
        return dataclasses.MISSING if before is None else before(recorded)

    def inert_fields(self) -> tuple:
        """Fields that cannot change what the agent sees in this game (inert_fields)."""
        return inert_fields(self.game)

    def whole_games(self, **changes) -> 'AtariConfig':
        """This config (with changes) playing whole games from their first frame, as evaluation and
        watching do: a lost life is no terminal, so nothing happens at it, and no start-up
        decorrelation plays random actions into an environment's first game (rlpyt decorrelates
        its training samplers only)."""
        return dataclasses.replace(self, episodic_life=False, life_loss_restarts_stack=False,
                                   fire_on_life_loss=False, decorrelation_steps=0, **changes)

    def num_actions(self) -> int:
        """Size of the action set the agent picks from."""
        return len(action_set(self.game, self.full_action_space))

    def make(self, seed: int) -> 'AtariEnv':
        return AtariEnv(self, seed)


class AtariEnv:
    """One preprocessed ALE game: reset() / step(action) -> (obs, reward, terminal, done)."""
    observation_dtype = np.uint8

    def __init__(self, config: AtariConfig, seed: int):
        self.config = config
        self.observation_shape = config.observation_shape
        self._ale = new_ale(config.game, seed, config.repeat_action_probability)
        self._rng = np.random.default_rng(seed)
        self._actions = action_set(config.game, config.full_action_space)
        self._presses_fire = config.presses_fire
        self.num_actions = len(self._actions)
        if tuple(self._ale.getScreenDims()) != RAW_SCREEN_SHAPE:
            raise ValueError(f'game {config.game!r} has screen {self._ale.getScreenDims()}, '
                             f'expected {RAW_SCREEN_SHAPE}')
        # The last two raw frames of a skip; max-pooled into _pooled.
        self._last_frame = np.zeros(RAW_SCREEN_SHAPE, np.uint8)
        self._previous_frame = np.zeros(RAW_SCREEN_SHAPE, np.uint8)
        self._pooled = np.zeros(RAW_SCREEN_SHAPE, np.uint8)
        # How _push_frame shrinks _pooled: by an index (_pick), or by cv2.resize of a view of it.
        self._pick = None
        if config.variant == 'stooke' and config.downsample == 'skip':
            self._pick = (slice(1, -1, 2), slice(None, None, 2))
        elif config.variant == 'nature' and config.resize == 'nearest':
            self._pick = nearest_indices(RAW_SCREEN_SHAPE, config.screen_size)
        elif config.variant == 'stooke':
            self._resize_source, self._interpolation = self._pooled[1:-1], cv2.INTER_AREA
        else:
            self._resize_source = self._pooled
            self._interpolation = CV2_INTERPOLATIONS[config.resize]
        # The stacked frames live in a ring (stack, H, W) and are interleaved into the
        # channel-last observation by cv2.merge: shifting a channel-last array costs ~40x more.
        height, width, stack = self.observation_shape
        self._frames = np.zeros((stack, height, width), np.uint8)
        self._newest = 0
        self._ring_orders = [[self._frames[(newest + 1 + age) % stack] for age in range(stack)]
                             for newest in range(stack)]
        if stack == 1:
            self._stack = self._frames.reshape(self.observation_shape)
        else:
            self._stack = np.zeros(self.observation_shape, np.uint8)
        self._max_steps = config.max_episode_steps or np.inf
        self._decorrelation_steps = config.resolved_decorrelation_steps
        self._needs_decorrelation = self._decorrelation_steps > 0
        self._lives = 0
        self.noop_count = 0
        self.episode_return = 0.0
        self.episode_length = 0

    def reset(self) -> np.ndarray:
        """Start a new game (no-ops, FIRE, and once per env the decorrelation steps)."""
        self._new_game()
        if self._needs_decorrelation:
            self._needs_decorrelation = False
            self._decorrelate()
        return self._stack

    def step(self, action: int):
        """Advance frame_skip frames; returns (obs, reward, terminal, done), obs env-owned."""
        raw_reward, game_over, life_lost = self._advance(self._actions[action])
        self.episode_return += raw_reward
        self.episode_length += 1
        done = game_over or self.episode_length >= self._max_steps
        terminal = done or (life_lost and self.config.episodic_life)
        if terminal and not done:
            if self.config.fire_on_life_loss and self._presses_fire and self._fire():
                done = True  # the game ended in the FIRE: the episode ends with this step
            elif self.config.life_loss_restarts_stack:
                self._restart_stack()
        reward = float(raw_reward)
        if self.config.clip_rewards:
            reward = max(-1.0, min(1.0, reward))
        return self._stack, reward, terminal, done

    def rgb_frame(self) -> np.ndarray:
        """The emulator's current screen in colour, (210, 160, 3) uint8: the raw frame before
        any preprocessing (for watching a policy play, common/watch.py)."""
        return self._ale.getScreenRGB()

    def close(self) -> None:
        self._ale = None

    def _new_game(self) -> None:
        ale = self._ale
        ale.reset_game()
        self.noop_count = 0
        if self.config.noop_max > 0:
            self.noop_count = int(self._rng.integers(1, self.config.noop_max + 1))
            # No-ops are raw emulator frames, as in DQN/PAAC codes; a game that ends during
            # them (it does not happen on real games) simply restarts.
            for _ in range(self.noop_count):
                ale.act(NOOP)
                if ale.game_over():
                    ale.reset_game()
        self._lives = ale.lives()
        self.episode_return = 0.0
        self.episode_length = 0
        if self._presses_fire:
            if self._fire():
                self._new_game()  # the game ended in its first FIRE (no real game does)
                return
        else:
            ale.getScreenGrayscale(self._last_frame)
            self._pooled[:] = self._last_frame
            self._push_frame()
        self._restart_stack()

    def _restart_stack(self) -> None:
        """Zeros before the newest frame, as DQN replay pads across an episode's start."""
        for frame in self._ring_orders[self._newest][:-1]:
            frame.fill(0)
        self._merge_stack()

    def _fire(self) -> bool:
        """Press FIRE for one agent step (games that wait for it otherwise stall); whether the
        game ended in it."""
        raw_reward, game_over, _ = self._advance(FIRE)
        self.episode_return += raw_reward
        return game_over

    def _decorrelate(self) -> None:
        """Take a uniform number of uniform-random actions so that envs start out of step."""
        num_steps = int(self._rng.integers(0, self._decorrelation_steps + 1))
        for _ in range(num_steps):
            _, _, _, done = self.step(int(self._rng.integers(self.num_actions)))
            if done:
                self._new_game()

    def _advance(self, ale_action: int):
        """Play frame_skip frames, push the pooled frame; (raw reward, game over, life lost)."""
        ale = self._ale
        frame_skip = self.config.frame_skip
        reward = 0
        for frame in range(frame_skip):
            reward += ale.act(ale_action)
            if ale.game_over():
                # The game ended inside the skip: the final screen stands for both frames.
                ale.getScreenGrayscale(self._last_frame)
                self._pooled[:] = self._last_frame
                break
            if frame == frame_skip - 2 and self.config.max_pool:
                ale.getScreenGrayscale(self._previous_frame)
        else:
            ale.getScreenGrayscale(self._last_frame)
            if self.config.max_pool and frame_skip > 1:
                np.maximum(self._previous_frame, self._last_frame, out=self._pooled)
            else:
                self._pooled[:] = self._last_frame
        self._push_frame()
        lives = ale.lives()
        life_lost = lives < self._lives
        self._lives = lives
        return reward, ale.game_over(), life_lost

    def _push_frame(self) -> None:
        """Put the preprocessed pooled frame into the ring as the newest, and restack."""
        self._newest = (self._newest + 1) % len(self._frames)
        frame = self._frames[self._newest]
        if self._pick is not None:
            frame[:] = self._pooled[self._pick]
        else:
            height, width = frame.shape
            cv2.resize(self._resize_source, (width, height), dst=frame,
                       interpolation=self._interpolation)
        self._merge_stack()

    def _merge_stack(self) -> None:
        """Interleave the ring, oldest first, into the (H, W, stack) observation."""
        if len(self._frames) > 1:
            cv2.merge(self._ring_orders[self._newest], self._stack)
