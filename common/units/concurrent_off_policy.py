"""Off-policy phases with sampling and optimization concurrent (Stooke & Abbeel 2018, section
5.3: the Q-value family "asynchronously", the sampler and the optimizer working at once over one
replay): a trainer thread trains each phase's updates while the main thread samples the next.

The replay ratio stays the configured one: phase k's updates_per_phase updates are owed once
phase k is stored, and the sampler waits while more than lead_phases phases are owed. So over
any stretch the transitions trained per transition sampled differ from the configured ratio by
at most lead_phases phases' worth, where a free-running optimizer drifts with the relative speed
of sampling and learning. TensorFlow releases the GIL while it trains and the simulators step in
worker processes, so the two threads overlap."""
import collections
import threading
import time

from common.units import off_policy

WAIT_SECONDS = 0.5


class ConcurrentOffPolicyPhases(off_policy.OffPolicyPhases):
    """OffPolicyPhases whose iterate() returns once its rollout is stored and no more than
    lead_phases phases' updates are still owed; close() (or leaving the with block) stops the
    trainer thread after its current update. A failed trainer ends the next iterate() with its
    error."""

    def __init__(self, sampler, learner, replay, settings, seed=0, replay_input='direct',
                 lead_phases=1):
        if lead_phases < 1:
            raise ValueError(f'lead_phases={lead_phases}; allowed: >= 1')
        super().__init__(sampler, learner, replay, settings, seed, replay_input)
        self.lead_phases = lead_phases
        self.progress = threading.Condition()
        self.owed = collections.deque()  # (env_steps before, after, trainable) per stored phase
        self.updates_done = 0
        self.updates_reported = 0
        self.stopping = False
        self.error = None
        self.trainer = threading.Thread(target=self._train_loop, name='q-trainer', daemon=True)
        self.trainer.start()

    def iterate(self, env_steps):
        self._raise_if_failed()
        self.epsilon = off_policy.linear_epsilon(self.settings, env_steps)
        episodes = self.sampler.collect(self._policy)
        self._store(self.sampler.rollout)
        trainable = self.replay_ready()
        with self.progress:
            self.owed.append((env_steps, env_steps + self.sampler.rollout.actions.size,
                              trainable))
            self.progress.notify_all()
            while len(self.owed) > self.lead_phases and self.error is None:
                self.progress.wait(WAIT_SECONDS)
            updates = self.updates_done - self.updates_reported
            self.updates_reported = self.updates_done
        self._raise_if_failed()
        return episodes, updates

    def _train_loop(self):
        try:
            while True:
                with self.progress:
                    while not self.owed and not self.stopping:
                        self.progress.wait(WAIT_SECONDS)
                    if self.stopping:
                        return
                    before, after, trainable = self.owed[0]
                updates = 0
                if trainable:
                    start = time.perf_counter()
                    updates = self._train(before)
                    self.learn_seconds += time.perf_counter() - start
                period = self.settings.target_period
                if after // period > before // period:
                    self.learner.update_target()
                with self.progress:
                    self.owed.popleft()
                    self.updates_done += updates
                    self.trained += updates * self.local_batch_size
                    self.progress.notify_all()
        except BaseException as error:  # pylint: disable=broad-except
            with self.progress:
                self.error = error
                self.progress.notify_all()

    def wait_for_training(self):
        """Returns once every stored phase's updates are made (the trainer idle until the next
        iterate), e.g. before a checkpoint; raises the trainer's error."""
        with self.progress:
            while self.owed and self.error is None:
                self.progress.wait(WAIT_SECONDS)
        self._raise_if_failed()

    def take_replay_ratio(self):
        with self.progress:
            return super().take_replay_ratio()

    def _raise_if_failed(self):
        if self.error is not None:
            raise RuntimeError(f'the Q trainer thread failed: {type(self.error).__name__}: '
                               f'{self.error}') from self.error

    def close(self):
        """Stops the trainer thread (after its current update) and the feed; idempotent."""
        with self.progress:
            self.stopping = True
            self.progress.notify_all()
        self.feed.close()
        self.trainer.join()
