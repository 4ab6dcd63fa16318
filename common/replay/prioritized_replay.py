"""A ReplayMemory whose minibatches are drawn by priority (prioritized replay, Schaul et al. 2016).

Item i of the priorities is step `position` of stream `stream`, i = stream * stream_capacity +
position. Only complete transitions carry a priority: a step enters at the running maximum when
its n following steps are stored, and leaves (priority 0) when it is overwritten or loses the
stack history its observation needs, so the draws cover exactly the steps the uniform replay
could draw. Nothing here imports TensorFlow.
"""
import numpy as np

from common.replay import prioritized


class PrioritizedReplay:
    """memory (a ReplayMemory, any n_step) with prioritized draws and priority updates."""

    def __init__(self, memory, alpha, priority_epsilon=1e-6, seed=0):
        self.memory = memory
        self.sampling = prioritized.PrioritizedSampling(
            memory.num_streams * memory.stream_capacity, alpha, priority_epsilon, seed)

    def __len__(self):
        return len(self.memory)

    def add(self, stream, observation, action, reward, terminal, episode_start):
        """ReplayMemory.add, then the priorities of the steps it completed or spoiled."""
        start = int(self.memory.cursors[stream])
        self.memory.add(stream, observation, action, reward, terminal, episode_start)
        self._refresh(stream, start, 1)

    def add_steps(self, stream, frames, actions, rewards, terminals, episode_starts):
        """ReplayMemory.add_steps, then the priorities of the steps it completed or spoiled."""
        start = int(self.memory.cursors[stream])
        self.memory.add_steps(stream, frames, actions, rewards, terminals, episode_starts)
        self._refresh(stream, start, len(actions))

    def sample(self, batch_size, beta):
        """(Batch, indices, importance weights): the weights multiply each transition's loss,
        the indices go back with its TD error to update_priorities."""
        indices, weights = self.sampling.sample(batch_size, beta)
        streams, positions = np.divmod(indices, self.memory.stream_capacity)
        return self.memory.transitions(streams, positions), indices, weights

    def update_priorities(self, indices, td_errors):
        self.sampling.update(indices, td_errors)

    def _refresh(self, stream, start, count):
        """After count steps were written from position start: those overwritten leave, and in
        a full stream the stack - 1 after them too (the oldest steps, whose history went); the
        steps whose n-th successor was just written enter, if their history is still held."""
        memory = self.memory
        capacity = memory.stream_capacity
        base = stream * capacity
        full = memory.counts[stream] == capacity
        spoiled = min(count + (memory.stack - 1 if full else 0), capacity)
        self.sampling.remove(base + (start + np.arange(spoiled)) % capacity)
        newest = int(memory.cursors[stream]) - 1
        completed = min(count, int(memory.valid_counts()[stream]))
        if completed > 0:
            ages = memory.n_step + np.arange(completed)
            self.sampling.add(base + (newest - ages) % capacity)
