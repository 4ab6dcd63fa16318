"""A ReplayMemory whose minibatches are drawn by priority (prioritized replay, Schaul et al. 2016).

Item i of the priorities is step `position` of stream `stream`, i = stream * stream_capacity +
position. Only complete transitions carry a priority: a step enters at the running maximum when
its n following steps are stored, and leaves (priority 0) when it is overwritten or loses the
stack history its observation needs, so the draws cover exactly the steps the uniform replay
could draw. Nothing here imports TensorFlow. save() and restore() keep it across sessions with
its memory (common/replay/replay_files.py): the priorities, the running maximum and the draws'
generator state go with the steps.
"""
import numpy as np

from common.replay import memory_state
from common.replay import prioritized
from common.replay import replay_files


class PrioritizedReplay:
    """memory (a ReplayMemory, any n_step) with prioritized draws and priority updates."""

    def __init__(self, memory, alpha, priority_epsilon=1e-6, seed=0):
        self.memory = memory
        self.sampling = prioritized.PrioritizedSampling(
            memory.num_streams * memory.stream_capacity, alpha, priority_epsilon, seed)
        self.writes = replay_files.WriteGuard()  # a write and its priorities

    def __len__(self):
        return len(self.memory)

    def add(self, stream, observation, action, reward, terminal, episode_start):
        """ReplayMemory.add, then the priorities of the steps it completed or spoiled."""
        self.writes.begin()
        start = int(self.memory.cursors[stream])
        self.memory.add(stream, observation, action, reward, terminal, episode_start)
        self._refresh(stream, start, 1)
        self.writes.end()

    def add_steps(self, stream, frames, actions, rewards, terminals, episode_starts):
        """ReplayMemory.add_steps, then the priorities of the steps it completed or spoiled."""
        self.writes.begin()
        start = int(self.memory.cursors[stream])
        self.memory.add_steps(stream, frames, actions, rewards, terminals, episode_starts)
        self._refresh(stream, start, len(actions))
        self.writes.end()

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
            # Steps left dangling by a restore's session boundary never enter.
            self.sampling.add(memory.drawable(base + (newest - ages) % capacity))

    def settings(self):
        """What a saved prioritized replay must share with this one besides its memory's."""
        return {'alpha': self.sampling.alpha, 'priority_epsilon': self.sampling.priority_epsilon}

    def save(self, directory, env_steps, margin_bytes=None):
        """ReplayMemory.save with the priorities (the sum tree's leaves; its inner sums are
        recomputed at restore), the running maximum and the draws' generator state."""
        self.writes.refuse_save('its priorities would not match its steps')
        arrays, meta = memory_state.saved_state(self.memory, env_steps, 'prioritized')
        arrays['priorities'] = self.sampling.tree.leaves()
        meta['arrays']['priorities'] = {'shape': [self.sampling.capacity], 'dtype': 'float64'}
        meta['prioritized'] = {**self.settings(), 'max_priority': self.sampling.max_priority,
                               'rng_state': self.sampling.rng.bit_generator.state}
        return replay_files.write_directory(directory, arrays, meta, margin_bytes)

    def restore(self, directory, env_steps):
        """ReplayMemory.restore with the priorities; ReplayFileError naming the file or the
        setting if it cannot (the replay is then empty, no step drawable)."""
        Error = replay_files.ReplayFileError
        meta = replay_files.read_meta(directory)
        memory_state.check_saved(self.memory, meta, directory, env_steps, 'prioritized')
        saved = meta.get('prioritized') if isinstance(meta.get('prioritized'), dict) else {}
        for key, value in self.settings().items():
            if saved.get(key) != value:
                raise Error(f"{directory} was saved with {key}={saved.get(key)!r}; this run's "
                            f"prioritized replay has {key}={value!r}")
        priorities = replay_files.load_array(directory, 'priorities',
                                             (self.sampling.capacity,), np.float64)
        max_priority = saved.get('max_priority')
        rng = np.random.default_rng()
        try:
            rng.bit_generator.state = saved['rng_state']
            if not (isinstance(max_priority, float) and max_priority > 0):
                raise ValueError(f'max_priority={max_priority!r}')
        except (KeyError, TypeError, ValueError) as error:
            raise Error(f'{directory}/{replay_files.META_FILE} holds no usable prioritized state '
                        f'({type(error).__name__}: {error})') from None
        if not np.all(np.isfinite(priorities)) or np.any(priorities < 0):
            raise Error(f'{directory}/priorities.npy holds priorities that are not finite and '
                        f'>= 0')
        try:
            memory_state.load_saved(self.memory, directory, meta)
        except BaseException:
            self.sampling.tree.load(np.zeros(self.sampling.capacity))  # nothing to draw
            raise
        self.sampling.tree.load(priorities)
        self.sampling.max_priority = max_priority
        self.sampling.rng = rng
        self.writes.reset()
