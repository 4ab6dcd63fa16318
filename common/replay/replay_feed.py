"""How a learner's minibatches leave replay: drawn when asked ('direct'), or by a tf.data
pipeline that draws the next one while the current one trains ('tf_data', the design's tf.data
queue for batched accelerator work). Both draw under the replay lock, so a sampler thread may
store into replay meanwhile; a prefetched draw can miss the steps stored after it was made."""
import threading

import numpy as np

from common.system import devices

REPLAY_INPUTS = ('direct', 'tf_data')


class DirectFeed:
    """Draws each minibatch (uniform: a stack of them) when the learner asks for it."""

    def __init__(self, replay, num_minibatches, batch_size, lock=None):
        self.replay = replay
        self.prioritized = hasattr(replay, 'update_priorities')
        self.num_minibatches = num_minibatches
        self.batch_size = batch_size
        self.lock = lock or threading.Lock()
        self.beta = 1.0  # prioritized: the importance exponent of the next draws

    def draw(self):
        """Uniform replay: a Batch of num_minibatches stacked minibatches. Prioritized: one
        (Batch, indices, weights) at the current beta."""
        with self.lock:
            if self.prioritized:
                return self.replay.sample(self.batch_size, self.beta)
            return self.replay.sample_stacked(self.num_minibatches, self.batch_size)

    def update_priorities(self, indices, td_errors):
        with self.lock:
            self.replay.update_priorities(indices, td_errors)

    def close(self):
        pass


class TFDataFeed(DirectFeed):
    """DirectFeed's draws through tf.data.Dataset.from_generator(...).prefetch(prefetch), made
    on first use (once replay can be drawn from), prefetched onto device (the learner's one GPU,
    common.system.devices.prefetch_device), or on the host where device is None."""

    def __init__(self, replay, num_minibatches, batch_size, lock=None, prefetch=1, device=None):
        super().__init__(replay, num_minibatches, batch_size, lock)
        self.prefetch = prefetch
        self.device = device
        self._iterator = None
        self._closed = threading.Event()

    def _draws(self):
        while not self._closed.is_set():
            draw = super().draw()
            if self.prioritized:
                batch, indices, weights = draw
                yield tuple(batch) + (indices.astype(np.int64), weights)
            else:
                yield tuple(draw)

    def _signature(self):
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        memory = self.replay.memory if self.prioritized else self.replay
        lead = (self.batch_size,) if self.prioritized else (self.num_minibatches,
                                                            self.batch_size)
        observation = tf.TensorSpec(lead + memory.observation_shape,
                                    tf.as_dtype(memory.observation_dtype))
        signature = (observation, tf.TensorSpec(lead, tf.int32), tf.TensorSpec(lead, tf.float32),
                     observation, tf.TensorSpec(lead, tf.float32))
        if self.prioritized:
            signature += (tf.TensorSpec(lead, tf.int64), tf.TensorSpec(lead, tf.float32))
        return signature

    def _make_iterator(self):
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        dataset = tf.data.Dataset.from_generator(self._draws, output_signature=self._signature())
        return iter(devices.prefetched(dataset, self.prefetch, self.device))

    def draw(self):
        if self._iterator is None:
            self._iterator = self._make_iterator()
        fields = next(self._iterator)
        if self.prioritized:
            return fields[:5], fields[5].numpy(), fields[6]
        return fields

    def close(self):
        """Ends the pipeline: the generator stops at its next draw."""
        self._closed.set()
        self._iterator = None


def make_feed(replay_input, replay, num_minibatches, batch_size, lock=None, device=None):
    """The feed named replay_input ('direct' or 'tf_data'; the latter prefetching onto device)."""
    if replay_input not in REPLAY_INPUTS:
        raise ValueError(f'replay_input={replay_input!r}; allowed: {", ".join(REPLAY_INPUTS)}')
    if replay_input == 'tf_data':
        return TFDataFeed(replay, num_minibatches, batch_size, lock, device=device)
    return DirectFeed(replay, num_minibatches, batch_size, lock)
