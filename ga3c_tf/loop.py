"""GA3C's main thread: watch the agents and threads, count, log, checkpoint, and anneal NP, NT and
NA (the paper's dynamic adjustment) while the server trains; and train(), GA3C's entry."""
import time

import numpy as np

from common.learners import actor_critic
from common.run import runner
from common.run import scalars
from common.run import tracker as tracker_lib
from common.system import segments
from ga3c_tf import learner as learner_lib
from ga3c_tf.server import GA3CServer


GA3C_COLUMNS = ('pps', 'tps', 'frames_per_sec', 'num_agents', 'num_predictors', 'num_trainers',
                'prediction_queue_size', 'training_queue_size', 'mean_prediction_batch',
                'mean_training_batch', 'mean_policy_lag', 'max_policy_lag'
                ) + actor_critic.UPDATE_STATS + (
                # Section 5.1's profile: an agent's mean wait for its prediction, the share of it
                # inside the model call, the mean seconds of a train call, and the share of an
                # update's time spent merging and padding its batch.
                'prediction_wait_ms', 'prediction_call_share', 'update_ms',
                'update_assembly_share')


def make_annealer(config):
    from ga3c_tf import dynamic  # pylint: disable=import-outside-toplevel
    return dynamic.Annealer(
        (config.num_predictors, config.num_trainers, config.num_agents),
        maximums=(config.max_predictors, config.max_trainers, config.max_agents),
        seed=config.seed, walk=config.dynamic_walk)


class _IntervalMeter:
    """Per-log-interval deltas of the server's counters and means of sampled queue sizes."""

    def __init__(self, server):
        self.server = server
        self.last = server.counts()
        self.queue_samples = []

    def sample_queues(self):
        self.queue_samples.append(self.server.queue_sizes())

    def row(self, seconds, frames_per_env_step):
        counts = self.server.counts()
        delta = {name: counts[name] - self.last[name] for name in counts}
        self.last = counts
        prediction_sizes, training_sizes = zip(*(self.queue_samples or [(0, 0)]))
        self.queue_samples = []
        mean_lag, max_lag = self.server.take_lags()
        num_predictors, num_trainers, num_agents = self.server.settings
        row = {
            'pps': delta['predictions'] / seconds,
            'tps': delta['updates'] / seconds,
            'frames_per_sec': delta['predictions'] * frames_per_env_step / seconds,
            'num_agents': num_agents, 'num_predictors': num_predictors,
            'num_trainers': num_trainers,
            'prediction_queue_size': float(np.mean(prediction_sizes)),
            'training_queue_size': float(np.mean(training_sizes)),
            'mean_prediction_batch': delta['predictions'] / max(delta['batches'], 1),
            'mean_training_batch': delta['samples'] / max(delta['updates'], 1),
            'mean_policy_lag': mean_lag, 'max_policy_lag': max_lag,
        }
        row.update(self.server.learner.update_means.take())
        row.update(profile(delta))
        return row


def profile(delta):
    """Section 5.1's profile columns from one interval's count deltas (None without data)."""
    waits, updates = delta['waits'], delta['updates']
    update_busy = delta['update_seconds'] + delta['assembly_seconds']
    return {
        'prediction_wait_ms': 1000 * delta['wait_seconds'] / waits if waits else None,
        'prediction_call_share': (delta['request_call_seconds'] / delta['wait_seconds']
                                  if waits and delta['wait_seconds'] > 0 else None),
        'update_ms': 1000 * delta['update_seconds'] / updates if updates else None,
        'update_assembly_share': (delta['assembly_seconds'] / update_busy
                                  if updates and update_busy > 0 else None),
    }


def take_progress(server, last):
    """Checks the agents; returns the env steps and updates since last (server.counts() then),
    the finished episodes, and server.counts() now. GA3C's and A3C-CPU's."""
    server.check_agents()
    counts = server.counts()
    return (counts['predictions'] - last['predictions'], counts['updates'] - last['updates'],
            server.drain_episodes(), counts)


class GA3CUnit(runner.Unit):
    """The main thread's share of GA3C: every poll_seconds, watch the agents and threads,
    count, and anneal NP, NT and NA (the paper's dynamic adjustment) while the server trains."""

    def __init__(self, config, server, poll_seconds=0.05):
        self.config = config
        self.server = server
        self.poll_seconds = poll_seconds
        self.annealer = make_annealer(config) if config.dynamic_settings else None
        self.next_adjustment = time.monotonic() + config.dynamic_initial_wait_seconds
        self.adjustment_start = time.monotonic()
        self.updates_at_adjustment = server.counts()['updates']
        self.meter = _IntervalMeter(server)
        self.last = server.counts()
        self.frames = tracker_lib.frames_per_step(config.env_config)

    def advance(self, env_steps):
        server = self.server
        time.sleep(self.poll_seconds)
        server.check_threads()
        steps, updates, episodes, self.last = take_progress(server, self.last)
        scalars.assign(server.learner.env_steps, env_steps + steps)
        self.meter.sample_queues()
        self._adjust()
        return steps, updates, episodes

    def _adjust(self):
        now = time.monotonic()
        if self.annealer is None or now < self.next_adjustment:
            return
        tps = ((self.last['updates'] - self.updates_at_adjustment)
               / max(now - self.adjustment_start, 1e-9))
        self.server.apply(self.annealer.step(tps))
        self.adjustment_start = time.monotonic()
        self.updates_at_adjustment = self.server.counts()['updates']
        self.next_adjustment = self.adjustment_start + self.config.dynamic_interval_seconds

    def updates(self):
        return self.server.updates

    def row(self, seconds):
        return self.meter.row(seconds, self.frames)


def train(config, run_dir):
    """Runs GA3C until config.total_steps, resuming from run_dir's checkpoint if there is one."""
    learner = learner_lib.build_learner(config)
    tracker = tracker_lib.tracker_for(
        run_dir, config, GA3C_COLUMNS,
        {'model': learner.model, 'optimizer': learner.optimizer, 'generator': learner.generator})
    scalars.assign(learner.env_steps, tracker.env_steps)

    def unit_of(server):
        server.apply((config.num_predictors, config.num_trainers, config.num_agents))
        return GA3CUnit(config, server)

    # A resumed run continues with fresh environments, seeded apart from the first session.
    with segments.scope():  # whatever an ending leaves of the run's shared memory goes
        return runner.train(
            tracker, lambda: GA3CServer(config, learner, seed=config.seed + tracker.env_steps),
            unit_of)
