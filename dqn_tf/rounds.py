"""RoundGate: the main thread releases W sampler threads for one step each and waits for all.

Raw locks instead of two threading.Barriers: a round costs W wake-ups of the samplers and one of
the main thread, where two barriers of W+1 parties cost 2(W+1) wake-ups through Condition
objects. The samplers share two cores with the learner here, so every wake-up is taken from it.
"""
import _thread


class SamplerFailed(RuntimeError):
    """A sampler thread raised during its step; the cause is chained."""


class RoundGate:
    """One go-lock per sampler (held while it must wait) and one done-lock for the main thread."""

    def __init__(self, num_workers):
        self.num_workers = num_workers
        self._go = [_thread.allocate_lock() for _ in range(num_workers)]
        for lock in self._go:
            lock.acquire()
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._count_lock = _thread.allocate_lock()
        self._remaining = 0
        self.stopping = False

    # Sampler side.
    def wait_for_round(self, index):
        """Blocks sampler `index` until its next round; False when the gate is closing."""
        self._go[index].acquire()
        return not self.stopping

    def finish(self):
        """Called once per round by every sampler, after its step (or its failure)."""
        with self._count_lock:
            self._remaining -= 1
            last = self._remaining == 0
        if last:
            self._done.release()

    # Main-thread side.
    def run_round(self, threads, errors):
        """Releases every sampler for one step; returns when all have finished it.

        threads: the sampler threads (a dead one ends the wait); errors: a callable returning
        (name, exception) pairs of failed samplers, raised here as SamplerFailed.
        """
        self._remaining = self.num_workers
        for lock in self._go:
            lock.release()
        while not self._done.acquire(timeout=1.0):
            if not all(thread.is_alive() for thread in threads):
                break
        for name, error in errors():
            raise SamplerFailed(f'{name} failed: {error!r}') from error
        if self._remaining != 0:
            raise SamplerFailed(f'{self._remaining} sampler thread(s) ended without finishing '
                                f'their step')

    def close(self):
        """Wakes every waiting sampler so that it sees `stopping` and returns."""
        self.stopping = True
        for lock in self._go:
            if lock.locked():  # only main releases go-locks, so it stays locked until here
                lock.release()
