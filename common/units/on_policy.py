"""The on-policy unit of the runner (common/run/runner.py): a sampler fills a (T, N) rollout, a
learner trains on it (rlpyt's Sampler and Algorithm under its Runner).

PAAC (Algorithm 1) and the accelerated methods' A2C and PPO are this unit with different
learners: anything with act(observations), train_on_rollout(observations, actions, rewards,
terminals) -> stats, update_means, model, optimizer and generator.
"""
import time

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

    def __init__(self, sampler, learner, steps_per_update=None):
        """steps_per_update: the env steps one iteration counts for the run (a multi-worker
        run's whole batch); by default this sampler's T x N."""
        self.sampler = sampler
        self.learner = learner
        self.learn_seconds = 0.0
        actions = sampler.rollout.actions
        self.steps_per_update = steps_per_update or actions.shape[0] * actions.shape[1]

    def _policy(self, observations):
        return self.learner.act(observations).numpy()

    def iterate(self):
        """One rollout and one training call; returns the episodes that ended, (score, length)."""
        episodes = self.sampler.collect(self._policy)
        rollout = self.sampler.rollout
        start = time.perf_counter()
        stats = self.learner.train_on_rollout(rollout.observations, rollout.actions,
                                              rollout.rewards, rollout.terminals)
        stats['loss'].numpy()  # Waits for the update, so 'learn' time is honest.
        self.learn_seconds += time.perf_counter() - start
        return episodes

    def take_phase_seconds(self):
        """Seconds stepping ('env'), selecting actions ('act') and learning since the last
        call: the time breakdown of PAAC's Figure 2."""
        phases = self.sampler.take_phase_seconds()
        phases['learn'], self.learn_seconds = self.learn_seconds, 0.0
        return phases

    def advance(self, env_steps):
        self.learner.set_env_steps(env_steps)
        return self.steps_per_update, 1, self.iterate()

    def updates(self):
        return int(self.learner.optimizer.iterations.numpy())

    def row(self, seconds):
        extra = {f'{name}_share': value / seconds
                 for name, value in self.take_phase_seconds().items()}
        extra.update(self.learner.update_means.take())
        return extra


def trackables(learner):
    """What a checkpoint of an on-policy learner holds."""
    return {'model': learner.model, 'optimizer': learner.optimizer,
            'generator': learner.generator}


def train(config, run_dir, learner, open_pool, sampler_kind, horizon, num_envs, strategy=None):
    """Runs until config.total_steps (RunConfig fields), resuming from run_dir's checkpoint.

    open_pool(seed) opens the environment pool (a context manager) for a sampler of
    sampler_kind; each iteration is horizon steps of num_envs environments and one update call.
    strategy: the tf.distribute strategy the learner was built under, if any; with a
    multi-worker one, num_envs is the whole run's, open_pool opens this worker's share of them
    (seeded apart), and the run starts from the chief's state (common/scale/multi_worker.py).
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
                            steps_per_update=num_envs * horizon)

    # A resumed run continues with fresh environments, seeded apart from the first session.
    return runner.train(tracker, lambda: open_pool(config.seed + tracker.env_steps), unit_of)

