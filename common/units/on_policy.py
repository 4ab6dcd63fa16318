"""The on-policy unit of the runner (common/run/runner.py): a sampler fills a (T, N) rollout, a
learner trains on it (rlpyt's Sampler and Algorithm under its Runner).

PAAC (Algorithm 1) and the accelerated methods' A2C and PPO are this unit with different
learners: anything with act(observations), train_on_rollout(observations, actions, rewards,
terminals) -> stats, update_means, model, optimizer and generator.

Overlapped (OverlapConfig.overlap_learning; the learner built with an acting model): each
rollout's update runs on a thread while the samplers collect the next rollout with the acting
copy of the parameters from before it, so a rollout is one update behind the parameters it
trains (APPO's policy lag of 1). TensorFlow releases the GIL while it trains and the simulators
step in worker processes, so sampling and learning share the machine instead of taking turns.

Reusing the acting pass (a learner built with reuse_activations): each policy call of the
rollout keeps the torso outputs it computed and the update takes them in place of its own
forward pass (common/learners/activation_reuse.py); the same update, one forward pass fewer.
"""
from concurrent import futures
import time

import numpy as np

from common.run import runner
from common.run import tracker as tracker_lib
from common.scale import multi_worker
from common.units import samplers

__all__ = ('PHASE_COLUMNS', 'OnPolicyUnit', 'trackables', 'train')

PHASE_COLUMNS = ('env_share', 'act_share', 'learn_share')


class OnPolicyUnit(runner.Unit):
    """iterate() is one rollout of every environment by the sampler, then one call of the
    learner's train_on_rollout (PAAC's Algorithm 1, lines 4-11 then 12-19); as the run call's
    unit, rows show where the time went (env, act, learn shares) and the update statistics."""

    def __init__(self, sampler, learner, steps_per_update=None, overlap=False):
        """steps_per_update: the env steps one iteration counts for the run (a multi-worker
        run's whole batch); by default this sampler's T x N. overlap: update on a thread while
        the next rollout is collected (the learner needs an acting model)."""
        if overlap and getattr(learner, 'acting_model', None) is None:
            raise ValueError('overlap=True needs a learner built with an acting_model')
        self.reuse = getattr(learner, 'reuses_activations', False)
        if overlap and self.reuse:
            raise ValueError('overlap=True and a learner reusing the acting pass: the update '
                             'would not train the parameters that acted; allowed: one of them')
        self.sampler = sampler
        self.learner = learner
        self.learn_seconds = 0.0
        actions = sampler.rollout.actions
        self.steps_per_update = steps_per_update or actions.shape[0] * actions.shape[1]
        self.overlap = overlap
        self.act = learner.lagged_act if overlap else learner.act
        self.updating = futures.ThreadPoolExecutor(1, 'update') if overlap else None
        self.update_in_flight = None
        self.env_steps = None
        self.kept = []  # per policy call of this rollout, the torso outputs it computed

    def policy(self, observations):
        """The sampler's policy: int32 actions for a batch of observations (kept torso
        outputs too, when the learner reuses the acting pass)."""
        if not self.reuse:
            return self.act(observations).numpy()
        actions, kept = self.learner.act_keeping_outputs(observations)
        self.kept.append(kept)
        return actions.numpy()

    def iterate(self):
        """One rollout and one training call (overlapped: the previous rollout's, finished,
        and this one's, started); returns the episodes that ended, (score, length)."""
        episodes = self.sampler.collect(self.policy)
        rollout = self.sampler.rollout
        arrays = (rollout.observations, rollout.actions, rollout.rewards, rollout.terminals)
        if not self.overlap:
            start = time.perf_counter()
            self.learn(arrays)
            self.learn_seconds += time.perf_counter() - start
            return episodes
        arrays = tuple(np.array(array) for array in arrays)  # the next collect overwrites them
        start = time.perf_counter()
        self.settle()
        if self.env_steps is not None:
            self.learner.set_env_steps(self.env_steps)
        self.learner.sync_acting()
        self.update_in_flight = self.updating.submit(self.learn, arrays)
        self.learn_seconds += time.perf_counter() - start
        return episodes

    def learn(self, arrays):
        """One update on the rollout's (observations, actions, rewards, terminals)."""
        if self.reuse:
            stats = self.learner.train_on_kept_outputs(*arrays, self._kept_rollout())
        else:
            stats = self.learner.train_on_rollout(*arrays)
        stats['loss'].numpy()  # Waits for the update, so 'learn' time is honest.

    def _kept_rollout(self):
        """The kept outputs of this rollout's policy calls, step by step: one call per step on
        all N environments (the synchronized sampler's), which anything else would break."""
        steps, self.kept = self.kept, []
        horizon, num_envs = self.sampler.rollout.actions.shape
        sizes = [len(kept[0]) for kept in steps]
        if sizes != [num_envs] * horizon:
            raise RuntimeError(f'reusing the acting pass needs one policy call per step on all '
                               f'{num_envs} environments (the synchronized sampler); got '
                               f'{len(steps)} calls for {horizon} steps, on {sizes} '
                               'environments')
        return steps

    def settle(self):
        """Waits for the update in flight (overlapped), raising its error."""
        if self.update_in_flight is not None:
            in_flight, self.update_in_flight = self.update_in_flight, None
            in_flight.result()

    def finish(self):
        """Lets the update in flight end (the checkpoint after it holds it) and stops the
        update thread."""
        if self.updating is not None:
            try:
                self.settle()
            finally:
                self.updating.shutdown(wait=True)

    def take_part_seconds(self):
        """Seconds stepping ('env'), selecting actions ('act') and learning since the last
        call: the time breakdown of PAAC's Figure 2."""
        parts = self.sampler.take_part_seconds()
        parts['learn'], self.learn_seconds = self.learn_seconds, 0.0
        return parts

    def advance(self, env_steps):
        if self.overlap:  # set once the update in flight, which reads the schedules, is done
            self.env_steps = env_steps
        else:
            self.learner.set_env_steps(env_steps)
        return self.steps_per_update, 1, self.iterate()

    def updates(self):
        return int(self.learner.optimizer.iterations.numpy())

    def row(self, seconds):
        self.settle()  # the update statistics of a whole update, not one being written
        extra = {f'{name}_share': value / seconds
                 for name, value in self.take_part_seconds().items()}
        extra.update(self.learner.update_means.take())
        return extra


def trackables(learner):
    """What a checkpoint of an on-policy learner holds."""
    return {'model': learner.model, 'optimizer': learner.optimizer,
            'generator': learner.generator, **learner.extra_trackables}


def train(config, run_dir, learner, open_pool, sampler_kind, horizon, num_envs, strategy=None,
          overlap=False):
    """Runs until config.total_steps (RunConfig fields), resuming from run_dir's checkpoint.

    open_pool(seed) opens the environment pool (a context manager) for a sampler of
    sampler_kind; each iteration is horizon steps of num_envs environments and one update call.
    strategy: the tf.distribute strategy the learner was built under, if any; with a
    multi-worker one, num_envs is the whole run's, open_pool opens this worker's share of them
    (seeded apart), and the run starts from the chief's state (common/scale/multi_worker.py).
    overlap: learning while sampling (OnPolicyUnit).
    """
    tracker = tracker_lib.tracker_for(run_dir, config,
                                      PHASE_COLUMNS + learner.update_means.names,
                                      trackables(learner))
    share = multi_worker.MachineShare.of(strategy)
    if share.num_machines > 1:
        learner.optimizer.build(learner.model.trainable_variables)  # its slots, before the copy
        multi_worker.start_from_chief(
            strategy, list(learner.model.variables) + list(learner.optimizer.variables), tracker)
        learner.generator.reset_from_seed(share.action_seed(config.seed, tracker.env_steps))
        learner.train_on_rollout = multi_worker.ending_on_lost_peers(learner.train_on_rollout,
                                                                    share.is_chief)
        open_share = open_pool
        open_pool = lambda seed: open_share(  # noqa: E731
            share.env_seed(seed, num_envs // share.num_machines))

    def unit_of(pool):
        return OnPolicyUnit(samplers.make_sampler(sampler_kind, pool, horizon), learner,
                            steps_per_update=num_envs * horizon, overlap=overlap)

    # A resumed run continues with fresh environments, seeded apart from the first session.
    return runner.train(tracker, lambda: open_pool(config.seed + tracker.env_steps), unit_of)

