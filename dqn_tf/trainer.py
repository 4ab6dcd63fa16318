"""Fast DQN's concurrent training: the trainer thread runs a target period's C/F minibatches
while the actors collect its C steps, drawing the next minibatches while the current ones train."""
import concurrent.futures
import threading


def train_prefetched(fast_dqn, num_minibatches, prefetcher, stop=lambda: False):
    """Trains num_minibatches on fast_dqn in calls of up to config.minibatches_per_call, drawing
    the next call's minibatches on `prefetcher` (a one-thread executor) while the current call
    trains; returns early once stop() is true.

    Replay is frozen while this runs (concurrent periods stage new steps), and one thread draws
    the minibatches in order, so the order stays deterministic; the draw (numpy, cv2) runs while
    the update holds no GIL, which takes it off the learner's critical path.
    """
    config = fast_dqn.config
    group_sizes = [min(config.minibatches_per_call, num_minibatches - start)
                   for start in range(0, num_minibatches, config.minibatches_per_call)]

    def draw(group_size):
        return fast_dqn.replay.sample_stacked(group_size, config.batch_size)

    next_group = prefetcher.submit(draw, group_sizes[0]) if group_sizes else None
    for index in range(len(group_sizes)):
        group = next_group.result()
        if stop():
            return
        if index + 1 < len(group_sizes):
            next_group = prefetcher.submit(draw, group_sizes[index + 1])
        fast_dqn.train_on_stack(group)


class TrainerThread(threading.Thread):
    """The concurrent-training thread: trains a dispatched number of minibatches, then reports."""

    def __init__(self, fast_dqn):
        super().__init__(name='dqn-trainer', daemon=True)
        self.fast_dqn = fast_dqn
        self._dispatched = threading.Event()
        self._finished = threading.Event()
        self._finished.set()
        self._pending = 0
        self.error = None
        self._prefetcher = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix='dqn-replay-prefetch')

    def dispatch(self, num_minibatches):
        self._finished.clear()
        self._pending = num_minibatches
        self._dispatched.set()

    def wait(self):
        """Blocks until the dispatched minibatches are done; re-raises the thread's error."""
        while not self._finished.wait(timeout=1.0):
            if not self.is_alive():
                break
        if self.error is not None:
            raise RuntimeError('dqn trainer thread failed') from self.error

    def stop(self):
        self._pending = 0
        self._dispatched.set()
        self._prefetcher.shutdown(wait=True)

    def _train_dispatched(self, fast_dqn):
        train_prefetched(fast_dqn, self._pending, self._prefetcher,
                         stop=lambda: fast_dqn.stopping or self._pending <= 0)
        self._pending = 0

    def run(self):
        fast_dqn = self.fast_dqn
        try:
            while True:
                self._dispatched.wait()
                self._dispatched.clear()
                if fast_dqn.stopping:
                    return
                self._train_dispatched(fast_dqn)
                self._finished.set()
        except BaseException as error:  # handed to the main thread by wait()
            self.error = error
            self._finished.set()
        finally:
            self._prefetcher.shutdown(wait=True)
