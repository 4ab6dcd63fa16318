"""RoundGate: the main thread starts a round of W actor steps and waits until all are taken.

Chained, the actors take their steps one after another: the main thread wakes actor 0, each
actor wakes the next when its step is done, and the last wakes the main thread. ALE holds the
GIL while it emulates (two threads stepping two ALEs take as long as one thread stepping both), so
steps that only emulate never run side by side in CPython anyway, and handing on costs one wake-up
per actor where waking all W at once has them contend for the GIL. Broadcast wakes all W at
once and the last to finish wakes the main thread: for actors that also run their own inference,
which releases the GIL and so overlaps the others' emulation. Raw locks, not Barriers or
Conditions: the actors share the cores with the learner here, and every wake-up costs it.
Led: actor 0 goes first and wakes the others once it has the round's batched actions, and the
last to finish wakes the main thread: synchronized actors whose environments step in processes
(DQNConfig.actor_envs), where the W emulations do run side by side.
"""
import _thread
import time

from common.system import processes


class ActorFailed(processes.WorkerDiedError):
    """A actor thread raised during its step; the cause is chained."""


ORDERS = ('chained', 'broadcast', 'led')
FINISH_GRACE_SECONDS = 30.0  # how long a round waits for the rest once an actor thread ended


class RoundGate:
    """One go-lock per actor (held while it must wait) and one done-lock for the main thread."""

    def __init__(self, num_actors, order='chained'):
        if order not in ORDERS:
            raise ValueError(f'order={order!r}; allowed: {", ".join(ORDERS)}')
        self.num_actors = num_actors
        self.order = order
        self.chained = order == 'chained'
        self._go = [_thread.allocate_lock() for _ in range(num_actors)]
        for lock in self._go:
            lock.acquire()
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._finished = 0
        self._led = False  # led order: actor 0 has woken the others this round
        self._count_lock = _thread.allocate_lock()
        self.stopping = False

    # Actor side.
    def wait_for_round(self, index):
        """Blocks actor `index` until its turn in the next round; False when closing."""
        self._go[index].acquire()
        return not self.stopping

    def finish(self, index, failed=False):
        """Called by actor `index` after its step (or its failure). Chained: wakes the next
        actor, or the main thread after the last one or a failure (the rest of that round is
        not taken). Broadcast and led: the last actor to finish wakes the main thread (led: an
        actor 0 failing before it woke the others wakes it at once)."""
        if not self.chained:
            if failed and index == 0 and self.order == 'led' and not self._led:
                self._done.release()  # before the others started: they take no step
                return
            with self._count_lock:
                self._finished += 1
                last = self._finished == self.num_actors
            if last:
                self._done.release()
            return
        self._finished = index + 1
        if failed or index + 1 == self.num_actors:
            self._done.release()
        else:
            _wake(self._go[index + 1])

    def lead_done(self):
        """Led order: actor 0 has the round's actions; the other actors start their steps."""
        self._led = True
        for lock in self._go[1:]:
            _wake(lock)

    # Main-thread side.
    def run_round(self, threads, errors):
        """Runs one round; returns when every actor has taken its step.

        threads: the actor threads (a dead one ends the wait); errors: a callable returning
        (name, exception) pairs of failed actors, raised here as ActorFailed.
        """
        self._finished = 0
        self._led = False
        for lock in (self._go if self.order == 'broadcast' else self._go[:1]):
            lock.release()
        grace_until = None
        while not self._done.acquire(timeout=1.0):
            if grace_until is None and not all(thread.is_alive() for thread in threads):
                # A failed actor's thread ends; the others of a broadcast or led round are still
                # taking their steps (one may be the cause, closing a pool): wait for them.
                grace_until = time.monotonic() + (0.0 if self.chained else FINISH_GRACE_SECONDS)
            if grace_until is not None and time.monotonic() >= grace_until:
                break
        for name, error in errors():
            raise ActorFailed(f'{name} failed: {error!r}') from error
        if self._finished != self.num_actors:
            raise ActorFailed(f'{self.num_actors - self._finished} actor thread(s) ended '
                                f'without taking their step')

    def close(self):
        """Wakes every waiting actor so that it sees `stopping` and returns."""
        self.stopping = True
        for lock in self._go:
            if lock.locked():
                _wake(lock)


def _wake(go_lock):
    """Releases a go-lock; close() and a actor finishing its step may both release one."""
    try:
        go_lock.release()
    except RuntimeError:  # released already: the actor wakes either way
        pass
