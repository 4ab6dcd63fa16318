"""The central parameter store of asynchronous learners (Stooke & Abbeel 2018, section 4.3): a
flat float32 parameter vector, its optimizer statistics and an update counter in one
shared-memory segment, split into chunks with a lock each.

A learner pulls the central parameters and applies its update chunk by chunk, each under the
chunk's lock: two learners write different chunks at the same time, and nobody reads a chunk
half-written. No TensorFlow here: learners hand in numpy update rules.
"""
import dataclasses
import multiprocessing
from multiprocessing import shared_memory

import numpy as np

from common import processes


@dataclasses.dataclass(frozen=True)
class StoreHandle:
    """What a process needs to attach to a store (picklable; pass it as a Process argument, as
    locks can only be shared when a process starts)."""
    name: str
    size: int
    slots: tuple
    locks: tuple
    counter_lock: object


class ParameterStore:
    """size parameters and one vector per slot name (e.g. RMSProp's 'mean_square'), all float32,
    plus an int64 update counter; num_chunks contiguous chunks, one lock each."""

    def __init__(self, handle, shm, owner):
        self.handle = handle
        self.shm = shm
        self._owner = owner
        size = handle.size
        vectors = np.ndarray((1 + len(handle.slots), size), np.float32, buffer=shm.buf)
        self.parameters = vectors[0]
        self.slots = {slot: vectors[1 + index] for index, slot in enumerate(handle.slots)}
        self._counter = np.ndarray((1,), np.int64, buffer=shm.buf,
                                   offset=vectors.nbytes)
        bounds = np.linspace(0, size, len(handle.locks) + 1).astype(int)
        self.chunks = [slice(start, stop) for start, stop in zip(bounds[:-1], bounds[1:])]

    @classmethod
    def create(cls, size, slots=(), num_chunks=1, context=None):
        """A new store, zero-filled; the creator removes its segment with close()."""
        if not isinstance(size, int) or size < 1:
            raise ValueError(f'size={size!r}; must be an int >= 1')
        if not isinstance(num_chunks, int) or not 1 <= num_chunks <= size:
            raise ValueError(f'num_chunks={num_chunks!r}; must be an int in [1, size={size}]')
        context = context or multiprocessing.get_context('spawn')
        nbytes = (1 + len(slots)) * size * 4 + 8
        shm = shared_memory.SharedMemory(create=True, size=nbytes)
        shm.buf[:nbytes] = bytes(nbytes)
        handle = StoreHandle(name=shm.name, size=size, slots=tuple(slots),
                             locks=tuple(context.Lock() for _ in range(num_chunks)),
                             counter_lock=context.Lock())
        return cls(handle, shm, owner=True)

    @classmethod
    def attach(cls, handle):
        """The store of handle, in another process (close() leaves the segment to its owner)."""
        return cls(handle, shared_memory.SharedMemory(name=handle.name), owner=False)

    @property
    def updates(self):
        """Updates applied so far (by every learner)."""
        with self.handle.counter_lock:
            return int(self._counter[0])

    def set_updates(self, count):
        with self.handle.counter_lock:
            self._counter[0] = count

    def pull(self, out=None):
        """A copy of the central parameters, read chunk by chunk under each chunk's lock."""
        out = np.empty(self.handle.size, np.float32) if out is None else out
        for chunk, lock in zip(self.chunks, self.handle.locks):
            with lock:
                out[chunk] = self.parameters[chunk]
        return out

    def apply(self, update):
        """update(chunk, parameters, slots) changes one chunk's parameters and slot vectors in
        place (chunk: the slice into the flat vectors, for the caller's own arrays); it runs
        for every chunk under that chunk's lock. Counts one update; returns the new count."""
        for chunk, lock in zip(self.chunks, self.handle.locks):
            with lock:
                update(chunk, self.parameters[chunk],
                       {slot: vector[chunk] for slot, vector in self.slots.items()})
        with self.handle.counter_lock:
            self._counter[0] += 1
            return int(self._counter[0])

    def close(self):
        """Unmaps the segment; the creating store also removes it."""
        self.parameters = self.slots = self._counter = None
        processes.release_shared_memory(self.shm, unlink=self._owner)


def rmsprop_step(parameters, mean_square, gradient, learning_rate, decay, epsilon,
                 epsilon_inside_sqrt=True):
    """RMSProp in numpy, in place on (views of) central vectors: mean_square moves toward
    gradient^2, parameters -= learning_rate gradient / sqrt(mean_square + epsilon) (TF1's
    placement) or / (sqrt(mean_square) + epsilon) (tf.keras'), as common.optim.RMSProp."""
    mean_square *= decay
    mean_square += (1.0 - decay) * np.square(gradient)
    if epsilon_inside_sqrt:
        step = np.sqrt(mean_square + epsilon)
    else:
        step = np.sqrt(mean_square)
        step += epsilon
    np.divide(gradient, step, out=step)
    step *= learning_rate
    parameters -= step
