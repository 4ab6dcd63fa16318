"""uint8 circular replay memory that stores each frame once, with one stream per sampler.

A stacked observation (H, W, stack) shares stack-1 frames with its predecessor, and a
transition's next state is the following step's observation. So each step stores only the
newest frame of its observation (obs[..., -1]) with its action, reward, terminal and whether it
starts an episode; stacks and next states are rebuilt at sampling time. Frames older than an
episode start are zeros, as AtariEnv pads a fresh episode. Each sampler (environment) writes its
own stream, so a stack never mixes two environments. Nothing here imports TensorFlow.
"""
from typing import NamedTuple

import cv2
import numpy as np


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
        position = self.cursors[stream]
        self.frames[stream, position] = self.newest_frame(observation)
        self.actions[stream, position] = action
        self.rewards[stream, position] = reward
        self.terminals[stream, position] = terminal
        self.episode_starts[stream, position] = episode_start
        self.cursors[stream] = (position + 1) % self.stream_capacity
        self.counts[stream] = min(self.counts[stream] + 1, self.stream_capacity)

    def add_steps(self, stream, frames, actions, rewards, terminals, episode_starts):
        """Stores len(actions) consecutive steps of stream at once (frames already newest-only)."""
        count = len(actions)
        if count > self.stream_capacity:
            raise ValueError(f'{count} steps exceed the stream capacity {self.stream_capacity}')
        positions = (self.cursors[stream] + np.arange(count)) % self.stream_capacity
        self.frames[stream, positions] = frames
        self.actions[stream, positions] = actions
        self.rewards[stream, positions] = rewards
        self.terminals[stream, positions] = terminals
        self.episode_starts[stream, positions] = episode_starts
        self.cursors[stream] = (self.cursors[stream] + count) % self.stream_capacity
        self.counts[stream] = min(self.counts[stream] + count, self.stream_capacity)

    def valid_counts(self):
        """Per stream, how many steps can be sampled: those whose n following steps are stored
        and whose stack history was not overwritten (the oldest stack-1 steps of a full stream
        are not)."""
        full = self.counts == self.stream_capacity
        history = np.where(full, self.stack - 1, 0)
        return np.maximum(self.counts - self.n_step - history, 0)

    def sample_indices(self, batch_size):
        """(streams, positions) of batch_size uniformly drawn valid steps."""
        valid = self.valid_counts()
        total = int(valid.sum())
        if total == 0:
            raise ValueError('replay memory holds no complete transition yet')
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
        oldest_first = np.arange(self.stack - 1, -1, -1)
        at = (positions[:, None] - oldest_first[None, :]) % self.stream_capacity
        frames = self.frames[streams[:, None], at]            # (B, stack, *frame_shape)
        starts = self.episode_starts[streams[:, None], at]    # (B, stack)
        # A frame is padding if a newer frame of its stack starts an episode.
        newer_starts = np.cumsum(starts[:, ::-1], axis=1)[:, ::-1] - starts
        frames[newer_starts > 0] = 0
        if self.stack == 1:
            return frames[:, 0]
        # cv2.merge interleaves the frames channel-last ~15x faster than a numpy transpose.
        observations = np.empty((len(positions),) + self.observation_shape,
                                self.observation_dtype)
        for row, observation in zip(frames, observations):
            cv2.merge(tuple(row), observation)
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
        next_positions = (positions + self.n_step) % self.stream_capacity
        return Batch(observations=self.stacked(streams, positions),
                     actions=self.actions[streams, positions],
                     rewards=rewards.astype(np.float32, copy=False),
                     next_observations=self.stacked(streams, next_positions),
                     terminals=terminals)

    def sample_stacked(self, num_minibatches, batch_size):
        """num_minibatches uniform minibatches (one draw of num_minibatches * batch_size steps),
        stacked: every field gets a leading (num_minibatches,) axis, for a learner that loops
        over them in one call."""
        batch = self.sample(num_minibatches * batch_size)
        return Batch(*(field.reshape((num_minibatches, batch_size) + field.shape[1:])
                       for field in batch))


class StagingBuffer:
    """One sampler's steps held back from replay until the threads synchronize (paper, sec. 3)."""

    def __init__(self, length, frame_shape, observation_dtype):
        self.frames = np.zeros((length,) + tuple(frame_shape), observation_dtype)
        self.actions = np.zeros(length, np.int32)
        self.rewards = np.zeros(length, np.float32)
        self.terminals = np.zeros(length, bool)
        self.episode_starts = np.zeros(length, bool)
        self.size = 0

    def add(self, frame, action, reward, terminal, episode_start):
        """Appends one step; frame is the newest frame only."""
        index = self.size
        if index >= len(self.actions):
            raise ValueError(f'staging buffer full ({len(self.actions)} steps); flush it first')
        self.frames[index] = frame
        self.actions[index] = action
        self.rewards[index] = reward
        self.terminals[index] = terminal
        self.episode_starts[index] = episode_start
        self.size = index + 1

    def flush_into(self, replay, stream):
        """Moves every held step into replay's stream, oldest first, and empties the buffer."""
        size = self.size
        if size:
            replay.add_steps(stream, self.frames[:size], self.actions[:size],
                             self.rewards[:size], self.terminals[:size],
                             self.episode_starts[:size])
        self.size = 0
