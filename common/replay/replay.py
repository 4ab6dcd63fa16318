"""uint8 circular replay memory that stores each frame once, with one stream per sampler.

A stacked observation (H, W, stack) shares stack-1 frames with its predecessor, and a
transition's next state is the following step's observation. So each step stores only the
newest frame of its observation (obs[..., -1]) with its action, reward, terminal and whether it
starts an episode; stacks and next states are rebuilt at sampling time. Frames older than an
episode start are zeros, as AtariEnv pads a fresh episode. Each sampler (environment) writes its
own stream, so a stack never mixes two environments. Nothing here imports TensorFlow.

save() and restore() keep a replay across sessions (common/replay/memory_state.py says what
is saved, common/replay/replay_files.py how its files are written). A restored replay ends
where the last session stopped its environments: the next step each stream stores starts an
episode, and the stream's last n_step steps before it, whose n-step transitions would
reach into the new session, are never drawn (dangling) until overwritten.
"""
from typing import NamedTuple

import cv2
import numpy as np

from common.replay import memory_state
from common.replay import replay_files

__all__ = ('Batch', 'frame_shape_of', 'footprint_bytes', 'ReplayMemory')


class Batch(NamedTuple):
    """A sampled minibatch of transitions (s, a, r, s', terminal), all numpy arrays."""
    observations: np.ndarray       # (B, *observation_shape)
    actions: np.ndarray            # (B,) int32
    rewards: np.ndarray            # (B,) float32
    next_observations: np.ndarray  # (B, *observation_shape)
    terminals: np.ndarray          # (B,) float32: 1 cuts the bootstrap from s'


def frame_shape_of(observation_shape, stack):
    """The shape stored per step: (H, W) of a stacked (H, W, stack) image, else the obs itself."""
    observation_shape = tuple(observation_shape)
    return observation_shape[:-1] if stack > 1 else observation_shape


def footprint_bytes(capacity, observation_shape, observation_dtype, stack):
    """Bytes a ReplayMemory of this capacity allocates (frames plus per-step scalars)."""
    frame_bytes = int(np.prod(frame_shape_of(observation_shape, stack))) * \
        np.dtype(observation_dtype).itemsize
    # action int32 + reward float32 + terminal bool + episode start bool per step.
    return capacity * (frame_bytes + 4 + 4 + 1 + 1)


class ReplayMemory:
    """capacity transitions split evenly over num_streams circular streams, frames stored once.

    n_step > 1: a sampled transition is (s_t, a_t, sum_j gamma^j r_{t+j}, s_{t+n}), its rewards
    summed up to n steps and cut after a terminal step (then terminal is 1 and s_{t+n} unused), as
    n-step Q-learning (Rainbow) samples them; the learner bootstraps with gamma^n.

    prefault: write the arrays once at creation, so their memory is taken now: a machine without
    room for the whole capacity fails at start rather than hours into a run, and the process's
    memory stays flat as the replay fills (otherwise the OS maps pages as frames arrive)."""

    def __init__(self, capacity, observation_shape, observation_dtype, stack, num_streams=1,
                 seed=0, prefault=False, n_step=1, gamma=1.0):
        if stack < 1 or num_streams < 1 or n_step < 1:
            raise ValueError(f'stack={stack}, num_streams={num_streams} and n_step={n_step} '
                             f'must be >= 1')
        if stack > 1 and tuple(observation_shape)[-1] != stack:
            raise ValueError(f'observation_shape={tuple(observation_shape)} does not end in the '
                             f'stack size {stack}')
        self.stream_capacity = capacity // num_streams
        if self.stream_capacity < stack + n_step:
            raise ValueError(f'capacity={capacity} gives {self.stream_capacity} steps per stream '
                             f'for {num_streams} streams; need at least stack + n_step = '
                             f'{stack + n_step}')
        self.n_step = n_step
        self.gamma = gamma
        self.capacity = self.stream_capacity * num_streams
        self.observation_shape = tuple(observation_shape)
        self.observation_dtype = np.dtype(observation_dtype)
        self.stack = stack
        self.num_streams = num_streams
        self.frame_shape = frame_shape_of(observation_shape, stack)
        shape = (num_streams, self.stream_capacity)
        self.frames = np.zeros(shape + self.frame_shape, self.observation_dtype)
        self.actions = np.zeros(shape, np.int32)
        self.rewards = np.zeros(shape, np.float32)
        self.terminals = np.zeros(shape, bool)
        self.episode_starts = np.zeros(shape, bool)
        if prefault:
            for array in (self.frames, self.actions, self.rewards, self.terminals,
                          self.episode_starts):
                array.fill(0)
        self.cursors = np.zeros(num_streams, np.int64)  # next write position per stream
        self.counts = np.zeros(num_streams, np.int64)   # steps held per stream
        self.rng = np.random.default_rng(seed)
        # Steps (stream * stream_capacity + position) whose n-step transition would span a
        # session boundary (restore): never drawn until overwritten. Sorted, small.
        self.dangling = np.zeros(0, np.int64)
        self._restarting = None  # after a restore: streams whose next step starts an episode
        self.writes = replay_files.WriteGuard()

    @property
    def nbytes(self):
        return sum(array.nbytes for array in (self.frames, self.actions, self.rewards,
                                              self.terminals, self.episode_starts))

    def __len__(self):
        return int(self.counts.sum())

    def newest_frame(self, observation):
        """The part of one observation that is stored: its newest frame."""
        return observation[..., -1] if self.stack > 1 else observation

    def add(self, stream, observation, action, reward, terminal, episode_start):
        """Stores one step of stream: s_t (its newest frame), a_t, r_t, terminal_t, s_t starts."""
        self.writes.begin()
        position = self.cursors[stream]
        self.frames[stream, position] = self.newest_frame(observation)
        self.actions[stream, position] = action
        self.rewards[stream, position] = reward
        self.terminals[stream, position] = terminal
        self.episode_starts[stream, position] = episode_start
        if self._restarting is not None or self.dangling.size:
            self._after_restore_write(stream, np.array([position]))
        self.cursors[stream] = (position + 1) % self.stream_capacity
        self.counts[stream] = min(self.counts[stream] + 1, self.stream_capacity)
        self.writes.end()

    def add_steps(self, stream, frames, actions, rewards, terminals, episode_starts):
        """Stores len(actions) consecutive steps of stream at once (frames already newest-only)."""
        count = len(actions)
        if count > self.stream_capacity:
            raise ValueError(f'{count} steps exceed the stream capacity {self.stream_capacity}')
        self.writes.begin()
        positions = (self.cursors[stream] + np.arange(count)) % self.stream_capacity
        self.frames[stream, positions] = frames
        self.actions[stream, positions] = actions
        self.rewards[stream, positions] = rewards
        self.terminals[stream, positions] = terminals
        self.episode_starts[stream, positions] = episode_starts
        if count and (self._restarting is not None or self.dangling.size):
            self._after_restore_write(stream, positions)
        self.cursors[stream] = (self.cursors[stream] + count) % self.stream_capacity
        self.counts[stream] = min(self.counts[stream] + count, self.stream_capacity)
        self.writes.end()

    def _after_restore_write(self, stream, positions):
        """The first step written to a stream after a restore starts an episode (its
        environment was reset), and dangling steps overwritten are dangling no more."""
        if self._restarting is not None and self._restarting[stream]:
            self.episode_starts[stream, positions[0]] = True
            self._restarting[stream] = False
            if not self._restarting.any():
                self._restarting = None
        if self.dangling.size:
            self.dangling = np.setdiff1d(self.dangling,
                                         stream * self.stream_capacity + positions)

    def valid_counts(self):
        """Per stream, how many steps can be sampled: those whose n following steps are stored
        and whose stack history was not overwritten (the oldest stack-1 steps of a full stream
        are not)."""
        full = self.counts == self.stream_capacity
        history = np.where(full, self.stack - 1, 0)
        return np.maximum(self.counts - self.n_step - history, 0)

    def sample_indices(self, batch_size):
        """(streams, positions) of batch_size uniformly drawn valid steps (dangling ones drawn
        again)."""
        valid = self.valid_counts()
        total = int(valid.sum())
        dangling = self.dangling[self._is_valid(*np.divmod(self.dangling, self.stream_capacity),
                                                valid)] if self.dangling.size else self.dangling
        if total <= len(dangling):
            raise ValueError('replay memory holds no complete transition yet')
        streams, positions = self._draw(valid, total, batch_size)
        if len(dangling):
            again = np.isin(streams * self.stream_capacity + positions, dangling)
            while again.any():
                streams[again], positions[again] = self._draw(valid, total, int(again.sum()))
                again = np.isin(streams * self.stream_capacity + positions, dangling)
        return streams, positions

    def _first_valid(self, streams):
        """Per stream, the position of its oldest valid step."""
        full = self.counts[streams] == self.stream_capacity
        oldest = np.where(full, self.cursors[streams], 0)
        return (oldest + np.where(full, self.stack - 1, 0)) % self.stream_capacity

    def _is_valid(self, streams, positions, valid):
        """Whether each (stream, position) is among the stream's valid steps (valid_counts)."""
        offsets = (positions - self._first_valid(streams)) % self.stream_capacity
        return offsets < valid[streams]

    def drawable(self, items):
        """Of items (stream * stream_capacity + position), those that are not dangling."""
        if not self.dangling.size:
            return items
        return items[~np.isin(items, self.dangling)]

    def _draw(self, valid, total, batch_size):
        """(streams, positions) of batch_size uniform draws among the total valid steps."""
        draws = self.rng.integers(0, total, size=batch_size)
        ends = np.cumsum(valid)
        streams = np.searchsorted(ends, draws, side='right')
        offsets = draws - (ends[streams] - valid[streams])  # within the stream's valid range
        full = self.counts[streams] == self.stream_capacity
        oldest = np.where(full, self.cursors[streams], 0)
        first_valid = oldest + np.where(full, self.stack - 1, 0)
        positions = (first_valid + offsets) % self.stream_capacity
        return streams, positions

    def stacked(self, streams, positions):
        """The stacked observations ending at these steps; frames before an episode start are 0."""
        return self._stacks(streams, positions, (0,))[0]

    def _stacks(self, streams, positions, shifts):
        """For each shift, the stacked observations ending at positions + shift (frames before
        an episode start within a stack are 0), from one gather of the frames they span: a
        transition's state and its next state (shift n_step) share stack - n_step frames."""
        stack = self.stack
        offsets = np.arange(1 - stack, max(shifts) + 1)
        at = (positions[:, None] + offsets[None, :]) % self.stream_capacity  # (B, span)
        rows = (streams[:, None] * self.stream_capacity + at).ravel()
        # np.take of whole rows copies each frame in one piece (faster than 2-D fancy indexing).
        frames = self.frames.reshape((self.capacity, -1)).take(rows, axis=0).reshape(
            at.shape + self.frame_shape)                       # (B, span, *frame_shape)
        starts = self.episode_starts[streams[:, None], at]    # (B, span)
        observations = []
        for shift in shifts:
            window = slice(shift, shift + stack)
            if stack == 1:
                observations.append(frames[:, shift])
                continue
            # A frame is padding if a newer frame of its stack starts an episode.
            window_starts = starts[:, window]
            padding = np.cumsum(window_starts[:, ::-1], axis=1)[:, ::-1] - window_starts > 0
            # cv2.merge interleaves the frames channel-last ~15x faster than a numpy transpose.
            merged = np.empty((len(positions),) + self.observation_shape, self.observation_dtype)
            for row, observation in zip(frames[:, window], merged):
                cv2.merge(tuple(row), observation)
            padded_rows, padded_frames = np.nonzero(padding)
            if len(padded_rows):
                merged[padded_rows, ..., padded_frames] = 0
            observations.append(merged)
        return observations

    def sample(self, batch_size):
        """A uniformly sampled Batch of complete transitions."""
        return self.transitions(*self.sample_indices(batch_size))

    def transitions(self, streams, positions):
        """The Batch of the (n-step) transitions that start at these valid steps."""
        if self.n_step == 1:
            rewards = self.rewards[streams, positions]
            terminals = self.terminals[streams, positions].astype(np.float32)
        else:
            at = (positions[:, None] + np.arange(self.n_step)[None, :]) % self.stream_capacity
            cut = self.terminals[streams[:, None], at]                      # (B, n)
            # Step j counts while no earlier step of the n was terminal.
            alive = np.cumprod(np.concatenate(
                [np.ones((len(positions), 1), bool), ~cut[:, :-1]], axis=1), axis=1)
            discounts = (self.gamma ** np.arange(self.n_step)).astype(np.float32)
            rewards = (self.rewards[streams[:, None], at] * alive * discounts).sum(axis=1)
            terminals = cut.any(axis=1).astype(np.float32)
        if self.n_step < self.stack:  # the two stacks overlap: one gather for both
            observations, next_observations = self._stacks(streams, positions, (0, self.n_step))
        else:
            observations = self.stacked(streams, positions)
            next_observations = self.stacked(
                streams, (positions + self.n_step) % self.stream_capacity)
        return Batch(observations=observations, actions=self.actions[streams, positions],
                     rewards=rewards.astype(np.float32, copy=False),
                     next_observations=next_observations, terminals=terminals)

    def sample_stacked(self, num_minibatches, batch_size):
        """num_minibatches uniform minibatches (one draw of num_minibatches * batch_size steps),
        stacked: every field gets a leading (num_minibatches,) axis, for a learner that loops
        over them in one call."""
        batch = self.sample(num_minibatches * batch_size)
        return Batch(*(field.reshape((num_minibatches, batch_size) + field.shape[1:])
                       for field in batch))

    def settings(self):
        """What a saved replay must share with this one to be restored into it."""
        return {'capacity': self.capacity, 'num_streams': self.num_streams,
                'stream_capacity': self.stream_capacity, 'stack': self.stack,
                'n_step': self.n_step, 'observation_shape': list(self.observation_shape),
                'observation_dtype': self.observation_dtype.name}

    def save(self, directory, env_steps, margin_bytes=None):
        """Writes this replay as directory, the replay of env_steps (replay_files.
        write_directory: beside it, then renamed in; margin_bytes left free); returns (bytes,
        whether the previous save was removed first). ReplayFileError if it cannot be."""
        arrays, meta = memory_state.saved_state(self, env_steps, 'uniform')
        return replay_files.write_directory(directory, arrays, meta, margin_bytes)

    def restore(self, directory, env_steps):
        """Reads a save() of this replay's settings and of env_steps into this (new) replay;
        ReplayFileError naming the file or the setting if it cannot (the replay is then empty)."""
        meta = replay_files.read_meta(directory)
        memory_state.check_saved(self, meta, directory, env_steps, 'uniform')
        memory_state.load_saved(self, directory, meta)

    def mark_session_boundary(self, dangling):
        """After a restore: the steps in dangling and each stream's last n_step are never
        drawn until overwritten, and each stream's next step starts an episode."""
        self.dangling = np.union1d(dangling, self._session_ends())
        self._restarting = np.ones(self.num_streams, bool)

    def _session_ends(self):
        """Per stream, its last n_step stored steps: their n-step transitions would reach past
        the end of the session that wrote them."""
        capacity = self.stream_capacity
        ends = [stream * capacity + (self.cursors[stream] - 1 - np.arange(
            min(self.n_step, int(self.counts[stream])))) % capacity
            for stream in range(self.num_streams)]
        return np.concatenate(ends).astype(np.int64)

    def clear(self):
        """Empties the replay (its arrays are left as they are, to be overwritten)."""
        self.cursors[:] = 0
        self.counts[:] = 0
        self.dangling = np.zeros(0, np.int64)
        self._restarting = None
        self.writes.reset()
