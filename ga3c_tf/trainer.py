"""Threaded trainer: take experience batches from a queue (merging up to a minimum size), one
train step per batch, fed directly or through a tf.data pipeline.

An experience item is a tuple of numpy arrays sharing their first (sample) dimension.
"""
import queue as queue_lib
import threading
import time
import traceback

import numpy as np

from common.system import devices


class ExperienceBatcher:
    """Takes items from a queue and concatenates them until at least min_batch_size samples;
    pad (optional) turns each batch into a padded one with its number of real samples as its
    last field (ga3c_tf/buckets.py pad_sequences)."""

    def __init__(self, experiences, min_batch_size=0, poll_seconds=0.05, pad=None):
        self.experiences = experiences
        self.min_batch_size = min_batch_size
        self.poll_seconds = poll_seconds
        self.pad = pad
        self.items_taken = 0
        self.assembly_seconds = 0.0  # merging and padding the batches, once their items came

    def samples(self, batch):
        """The real samples in a batch this batcher gave (not its padding)."""
        return len(batch[0]) if self.pad is None else int(batch[-1])

    def next_batch(self, stop_event):
        """The next merged batch, or None once stop_event is set (a partial batch is dropped)."""
        parts, size = [], 0
        while not stop_event.is_set():
            try:
                item = self.experiences.get(timeout=self.poll_seconds)
            except queue_lib.Empty:
                continue
            self.items_taken += 1
            parts.append(item)
            size += len(item[0])
            if size >= self.min_batch_size:
                start = time.perf_counter()
                if len(parts) == 1:
                    batch = parts[0]
                else:
                    batch = tuple(np.concatenate(fields) for fields in zip(*parts))
                batch = batch if self.pad is None else self.pad(batch)
                self.assembly_seconds += time.perf_counter() - start
                return batch
        return None


class TrainerThread(threading.Thread):
    """Calls train_fn(*batch) for every batch the batcher yields, until stopped.

    input_signature (tf.TensorSpec per field) and use_tf_data=True route batches through
    tf.data.Dataset.from_generator(...).prefetch(1), prefetched to the GPU when there is one;
    otherwise the numpy batch goes straight to train_fn.
    """

    def __init__(self, batcher, train_fn, input_signature=None, use_tf_data=False,
                 name='trainer'):
        super().__init__(name=name, daemon=True)
        if use_tf_data and input_signature is None:
            raise ValueError('use_tf_data=True needs an input_signature')
        self.batcher = batcher
        self.train_fn = train_fn
        self.input_signature = input_signature
        self.use_tf_data = use_tf_data
        self.stop_event = threading.Event()
        self.updates = 0
        self.samples = 0
        self.update_seconds = 0.0  # inside train_fn
        self.error = None

    def _batches(self):
        while True:
            batch = self.batcher.next_batch(self.stop_event)
            if batch is None:
                return
            yield batch

    def _dataset(self):
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        dataset = tf.data.Dataset.from_generator(
            self._batches, output_signature=tuple(self.input_signature))
        return devices.prefetched(dataset, 1, devices.prefetch_device())

    def run(self):
        try:
            for batch in (self._dataset() if self.use_tf_data else self._batches()):
                start = time.perf_counter()
                self.train_fn(*batch)
                self.update_seconds += time.perf_counter() - start
                self.updates += 1
                self.samples += self.batcher.samples(batch)
                if self.stop_event.is_set():
                    break
        except Exception:  # pylint: disable=broad-except
            self.error = traceback.format_exc()

    def stop(self):
        """Asks the thread to end; it does within the batcher's poll time plus one update."""
        self.stop_event.set()
