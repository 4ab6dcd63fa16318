"""Fast DQN's staging buffer (Daley & Amato 2021, Algorithm 1): an actor's steps held apart
until the target period ends, then written into replay in one go."""
import numpy as np

__all__ = ('StagingBuffer',)


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
        # Emptied first, so a flush that an interrupt cut short is never repeated (which would
        # store its steps twice); replay refuses to save a write cut short.
        self.size = 0
        if size:
            replay.add_steps(stream, self.frames[:size], self.actions[:size],
                             self.rewards[:size], self.terminals[:size],
                             self.episode_starts[:size])
