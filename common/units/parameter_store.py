"""The central parameter store of asynchronous learners (Stooke & Abbeel 2018, section 4.3): a
flat float32 parameter vector, its optimizer statistics and an update counter in one
shared-memory segment, split into chunks with a lock each.

A learner pulls the central parameters and applies its update chunk by chunk, each under the
chunk's lock: two learners write different chunks at the same time, and nobody reads a chunk
half-written. No TensorFlow here: learners hand in numpy update rules.

A learner killed while holding a lock (mid-update or mid-read) does not stop the others: every
lock records its holder's pid, a writer first copies its chunk aside (an undo copy), and whoever
waits on a lock whose holder is dead rolls a half-written chunk back to its undo copy and frees
the lock. The store stays consistent: every chunk holds whole updates only.
"""
import dataclasses
import multiprocessing
import os
from multiprocessing import shared_memory

import numpy as np

from common.system import processes
from common.system import segments


@dataclasses.dataclass(frozen=True)
class StoreHandle:
    """What a process needs to attach to a store (picklable; pass it as a Process argument, as
    locks can only be shared when a process starts)."""
    name: str
    size: int
    slots: tuple
    locks: tuple
    counter_lock: object
    recovery_lock: object = None


# How long a process waits on a lock before it checks whether the holder is still alive.
HOLDER_CHECK_SECONDS = 0.5


class ParameterStore:
    """size parameters and one vector per slot name (e.g. RMSProp's 'mean_square'), all float32,
    plus an int64 update counter; num_chunks contiguous chunks, one lock each."""

    def __init__(self, handle, shm, owner):
        self.handle = handle
        self.shm = shm
        self._owner = owner
        size = handle.size
        num_vectors = 1 + len(handle.slots)
        # Layout: the vectors, their undo copies, the update counter, then per lock (the chunks'
        # and the counter's) the holder's pid and, for chunks, the pid writing it (0: none).
        vectors = np.ndarray((num_vectors, size), np.float32, buffer=shm.buf)
        self._vectors = vectors
        self._undo = np.ndarray((num_vectors, size), np.float32, buffer=shm.buf,
                                offset=vectors.nbytes)
        offset = 2 * vectors.nbytes
        self._counter = np.ndarray((1,), np.int64, buffer=shm.buf, offset=offset)
        num_locks = len(handle.locks) + 1
        self._holders = np.ndarray((num_locks,), np.int64, buffer=shm.buf, offset=offset + 8)
        self._writers = np.ndarray((num_locks,), np.int64, buffer=shm.buf,
                                   offset=offset + 8 + 8 * num_locks)
        self.parameters = vectors[0]
        self.slots = {slot: vectors[1 + index] for index, slot in enumerate(handle.slots)}
        bounds = np.linspace(0, size, len(handle.locks) + 1).astype(int)
        self.chunks = [slice(start, stop) for start, stop in zip(bounds[:-1], bounds[1:])]
        self._locks = tuple(handle.locks) + (handle.counter_lock,)
        self._pid = os.getpid()
        self.recoveries = 0  # locks this process freed from a dead holder

    @staticmethod
    def nbytes(size, num_slots, num_chunks):
        """The segment's size: vectors and undo copies, the counter, pids per lock."""
        return 2 * (1 + num_slots) * size * 4 + 8 + 2 * 8 * (num_chunks + 1)

    @classmethod
    def create(cls, size, slots=(), num_chunks=1, context=None):
        """A new store, zero-filled; the creator removes its segment with close()."""
        if not isinstance(size, int) or size < 1:
            raise ValueError(f'size={size!r}; must be an int >= 1')
        if not isinstance(num_chunks, int) or not 1 <= num_chunks <= size:
            raise ValueError(f'num_chunks={num_chunks!r}; must be an int in [1, size={size}]')
        context = context or multiprocessing.get_context('spawn')
        nbytes = cls.nbytes(size, len(slots), num_chunks)
        shm = segments.create(nbytes)
        shm.buf[:nbytes] = bytes(nbytes)
        handle = StoreHandle(name=shm.name, size=size, slots=tuple(slots),
                             locks=tuple(context.Lock() for _ in range(num_chunks)),
                             counter_lock=context.Lock(), recovery_lock=context.Lock())
        return cls(handle, shm, owner=True)

    @classmethod
    def attach(cls, handle):
        """The store of handle, in another process (close() leaves the segment to its owner)."""
        return cls(handle, shared_memory.SharedMemory(name=handle.name), owner=False)

    def _acquire(self, index):
        """Takes lock index (the counter's is the last), freeing it first if its holder died."""
        lock = self._locks[index]
        while not lock.acquire(timeout=HOLDER_CHECK_SECONDS):
            self._recover(index)
        self._holders[index] = self._pid

    def _release(self, index):
        self._holders[index] = 0
        self._locks[index].release()

    def _recover(self, index):
        """If lock index's holder is dead: rolls back the chunk it was writing (if any) to the
        undo copy and releases the lock on its behalf, once (under the recovery lock)."""
        with self.handle.recovery_lock:
            holder = int(self._holders[index])
            if not holder or processes.pid_alive(holder):
                return
            if int(self._writers[index]) == holder:
                chunk = self.chunks[index]
                self._vectors[:, chunk] = self._undo[:, chunk]
                self._writers[index] = 0
            self._holders[index] = 0
            self._locks[index].release()
            self.recoveries += 1

    @property
    def updates(self):
        """Updates applied so far (by every learner)."""
        counter = len(self.chunks)
        self._acquire(counter)
        try:
            return int(self._counter[0])
        finally:
            self._release(counter)

    def set_updates(self, count):
        counter = len(self.chunks)
        self._acquire(counter)
        try:
            self._counter[0] = count
        finally:
            self._release(counter)

    def pull(self, out=None):
        """A copy of the central parameters, read chunk by chunk under each chunk's lock."""
        out = np.empty(self.handle.size, np.float32) if out is None else out
        for index, chunk in enumerate(self.chunks):
            self._acquire(index)
            try:
                out[chunk] = self.parameters[chunk]
            finally:
                self._release(index)
        return out

    def apply(self, update):
        """update(chunk, parameters, slots) changes one chunk's parameters and slot vectors in
        place (chunk: the slice into the flat vectors, for the caller's own arrays); it runs
        for every chunk under that chunk's lock, after the chunk is copied to its undo copy.
        Counts one update; returns the new count."""
        for index, chunk in enumerate(self.chunks):
            self._acquire(index)
            try:
                self._undo[:, chunk] = self._vectors[:, chunk]
                self._writers[index] = self._pid
                update(chunk, self.parameters[chunk],
                       {slot: vector[chunk] for slot, vector in self.slots.items()})
                self._writers[index] = 0
            finally:
                self._release(index)
        counter = len(self.chunks)
        self._acquire(counter)
        try:
            self._counter[0] += 1
            return int(self._counter[0])
        finally:
            self._release(counter)

    def close(self):
        """Unmaps the segment; the creating store also removes it."""
        self.parameters = self.slots = self._counter = self._vectors = self._undo = None
        self._holders = self._writers = None
        processes.release_shared_memory(self.shm, unlink=self._owner)


def rmsprop_step(parameters, mean_square, gradient, learning_rate, decay, epsilon,
                 epsilon_inside_sqrt=True):
    """RMSProp in numpy, in place on (views of) central vectors: mean_square moves toward
    gradient^2, parameters -= learning_rate gradient / sqrt(mean_square + epsilon) (TF1's
    placement) or / (sqrt(mean_square) + epsilon) (tf.keras'), as common.learners.optim.RMSProp."""
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
