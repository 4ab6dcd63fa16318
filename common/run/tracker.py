"""The bookkeeping every training loop shares: counters, log intervals, episodes, checkpoints.

A paper's loop reports steps, updates and finished episodes; the tracker decides when to write a
metrics row (with the paper's own columns) and when to checkpoint, and resumes all of it (the
start, Ctrl-C and end of a session are common/run/runner.py's train). A run whose
updates diverge stops (DivergedError): after the metrics row whose loss or gradient norm is not
finite, or where a checkpoint would hold weights that are not; none of those is written, so the
newest checkpoint, written before, stays.
"""
import math
import os
import time

import tensorflow as tf

from common.run import checkpoint as checkpoint_lib
from common.run import metrics
from common.run import run_record
from common.run import scalars
from common.run import session_stop as session_stop_lib
from common.run import superseded
from common.system import errors
from common.system import heap
from common.system import machine_load

__all__ = ('DIVERGENCE_STATS', 'DivergedError', 'finite_weights', 'RunTracker', 'SESSION_START',
           'frames_per_step', 'tracker_for')

# The last metrics column: on each session's first row, how it started ('new', 'resumed' in
# place, or 'carried' from another machine's state); empty on the other rows.
SESSION_START = superseded.SESSION_START

# The update statistics whose non-finite interval mean means the run diverged.
DIVERGENCE_STATS = ('loss', 'grad_norm')


class DivergedError(errors.RunError):
    """The updates produced non-finite numbers; the message names the step and the update."""


def finite_weights(trackables):
    """Whether every trainable floating-point variable of trackables (modules or variables) is
    finite; one host sync."""
    variables = []
    for trackable in trackables.values():
        if isinstance(trackable, tf.Variable):
            variables += [trackable] if trackable.trainable else []
        else:
            variables += list(getattr(trackable, 'trainable_variables', ()))
    checks = [tf.reduce_all(tf.math.is_finite(variable)) for variable in variables
              if variable.dtype.is_floating]
    return bool(tf.reduce_all(checks)) if checks else True


class RunTracker:
    """Counts a run's progress and writes it in the common run format."""

    def __init__(self, run_dir, total_steps, log_every_seconds, checkpoint_every_steps,
                 extra_columns=(), frames_per_step=1, trackables=None, stream=None,
                 milestone_every_steps=0, session_stop=None, log_every_steps=0):
        self.run_dir = run_dir
        self.total_steps = total_steps
        self.session_stop = session_stop  # a session_stop.SessionStop, or None
        self.stop_reason = None  # why this session ended before total_steps, once it has
        self.log_every_seconds = log_every_seconds
        self.log_every_steps = log_every_steps  # > 0: rows by env steps, not by the clock
        self.checkpoint_every_steps = checkpoint_every_steps
        self.frames_per_step = frames_per_step
        self.counters = checkpoint_lib.Counters()
        self.trackables = dict(trackables or {})
        self.checkpointer = checkpoint_lib.Checkpointer(
            run_dir, milestone_every_steps=milestone_every_steps, counters=self.counters,
            **self.trackables)
        self.restored_from = self.checkpointer.restore()
        self.newest_checkpoint = self.restored_from
        self._last_row_updates = None
        self._weights_checked_for = None  # the due checkpoint interval_due() checked for
        self.episode_stats = metrics.EpisodeStats()
        self.adopt_counters()
        # file name -> rows past the restored step, set aside; with no checkpoint, every row
        # (of sessions that ended before their first checkpoint): this one starts at step 0.
        self.superseded_rows = superseded.set_aside_rows_after(
            run_dir, self.env_steps if self.restored_from else -1)
        if self.restored_from:
            self._reload_recent_scores()
        self.session_start = self._session_start()
        self._start_unlogged = True
        logger_kwargs = {} if stream is None else {'stream': stream}
        self.logger = metrics.RunLogger(
            run_dir, tuple(extra_columns) + (SESSION_START,), total_steps,
            session_end_steps=None if session_stop is None else session_stop.steps,
            **logger_kwargs)
        self._interval_start = time.perf_counter()
        self._interval_steps = 0
        self._interval_updates = 0
        self._interval_load = machine_load.IntervalLoad()

    def _session_start(self):
        """How this session starts: 'new' (no checkpoint), 'carried' (from the checkpoint a
        carried run was written as, common/run/carry.py) or 'resumed' (in place)."""
        if not self.restored_from:
            return 'new'
        carried = run_record.last_session(self.run_dir).get(run_record.CARRIED_FROM) or {}
        return 'carried' if carried.get('env_steps') == self.env_steps else 'resumed'

    def adopt_counters(self):
        """Continues from the counters' values: restored from a checkpoint, or (a multi-worker
        run's other workers) broadcast from the chief's."""
        self.env_steps = int(self.counters.env_steps.numpy())
        self.episodes = int(self.counters.episodes.numpy())
        self.clock = metrics.Clock(float(self.counters.elapsed_seconds.numpy()))
        self._next_checkpoint = (self.env_steps // self.checkpoint_every_steps + 1) * \
            self.checkpoint_every_steps
        if self.log_every_steps:
            self._next_row = (self.env_steps // self.log_every_steps + 1) * self.log_every_steps

    def _reload_recent_scores(self):
        """Seeds the score window from episodes.csv, so score_mean_100 continues on resume."""
        path = os.path.join(self.run_dir, 'episodes.csv')
        for row in superseded.read_history(path, upto=self.env_steps):
            self.episode_stats.add(float(row['score']), int(row['length']))
        self.episode_stats.count = self.episodes

    def start_interval(self):
        """Starts the rate clock now, so set-up time (workers, tracing) is not counted."""
        self._interval_start = time.perf_counter()
        self._interval_steps = 0
        self._interval_updates = 0
        self._interval_load.restart()

    @property
    def done(self):
        return self.env_steps >= self.total_steps or self.stop_reason is not None

    def check_session_stop(self):
        """Ends the session (done) if its --stop_at_* point is reached; the run call asks at
        boundaries, where a checkpoint may be taken."""
        if self.session_stop is not None and self.stop_reason is None:
            self.stop_reason = self.session_stop.reason(
                self.env_steps, self.episode_stats.recent_scores, self.clock.elapsed())
        return self.stop_reason

    def add_steps(self, env_steps, updates=0):
        self.env_steps += env_steps
        self._interval_steps += env_steps
        self._interval_updates += updates

    def add_episodes(self, episodes):
        """episodes: iterable of (score, length) finished since the last call."""
        wall_time = self.clock.elapsed()
        for score, length in episodes:
            self.episodes += 1
            self.episode_stats.add(score, length)
            self.logger.log_episode(wall_time, self.env_steps, score, length)

    def interval_seconds(self):
        return max(time.perf_counter() - self._interval_start, 1e-9)

    def interval_due(self):
        """True when the loop should log a row now: the log interval has passed, or a checkpoint
        is due and the weights are not finite (the row shows the statistics that diverged
        before log_interval or save() stops the run)."""
        if self.log_every_steps:
            if self.env_steps >= self._next_row:
                while self._next_row <= self.env_steps:
                    self._next_row += self.log_every_steps
                return True
        elif time.perf_counter() - self._interval_start >= self.log_every_seconds:
            return True
        if not self.checkpoint_due() or self._weights_checked_for == self._next_checkpoint:
            return False
        # Once per checkpoint: DQN's rounds ask every few steps until its period ends.
        self._weights_checked_for = self._next_checkpoint
        return not finite_weights(self.trackables)

    def log_interval(self, updates, extra=None):
        """Writes one metrics row; extra maps the paper's columns to values for this interval."""
        seconds = self.interval_seconds()
        row = {
            'wall_time': self.clock.elapsed(),
            'env_steps': self.env_steps,
            'frames': self.env_steps * self.frames_per_step,
            'updates': updates,
            'episodes': self.episodes,
            'score_mean_100': self.episode_stats.mean_score,
            'steps_per_sec': self._interval_steps / seconds,
            'updates_per_sec': self._interval_updates / seconds,
            **self._interval_load.take(seconds),
        }
        row.update(extra or {})
        if self._start_unlogged:  # the session's first row says how it started
            row[SESSION_START] = self.session_start
            self._start_unlogged = False
        self.logger.log_interval(row)
        self._interval_start = time.perf_counter()
        self._interval_steps = 0
        self._interval_updates = 0
        # After the row, whose rss_mb is what the run held with what the heap kept (a leak
        # check, not a trimmed figure); its milliseconds count in the next interval.
        heap.release_free_heap()
        self._last_row_updates = updates
        self._stop_if_diverged(row)
        return seconds

    def _stop_if_diverged(self, row):
        """Raises DivergedError if the row's loss or gradient norm is not finite."""
        for name in DIVERGENCE_STATS:
            value = row.get(name)
            if value is not None and not math.isfinite(value):
                raise self._diverged(f'non-finite {name} ({value})',
                                     f'at update {row["updates"]:,}, step {self.env_steps:,}')

    def _diverged(self, what, where):
        kept = (f'the newest checkpoint, {self.newest_checkpoint}, stays'
                if self.newest_checkpoint else 'there is no checkpoint')
        return DivergedError(f'{what} {where}: the run diverged; no checkpoint of it was '
                             f'written and {kept}; lower the learning rate and rerun')

    def checkpoint_due(self):
        """True when maybe_checkpoint() would save now."""
        return self.env_steps >= self._next_checkpoint

    def maybe_checkpoint(self):
        if self.checkpoint_due():
            self.save()
            while self._next_checkpoint <= self.env_steps:
                self._next_checkpoint += self.checkpoint_every_steps

    def save(self):
        """Writes a checkpoint; DivergedError, writing none, if the weights are not finite."""
        if not finite_weights(self.trackables):
            last = self._last_row_updates
            raise self._diverged('non-finite weights', f'at step {self.env_steps:,} ' + (
                f'(update {last:,} at the last metrics row)' if last is not None
                else "(before this session's first metrics row)"))
        scalars.assign(self.counters.env_steps, self.env_steps)
        scalars.assign(self.counters.episodes, self.episodes)
        scalars.assign(self.counters.elapsed_seconds, self.clock.elapsed())
        self.newest_checkpoint = self.checkpointer.save(self.env_steps)
        heap.release_free_heap()  # the write's and the read-back's buffers, freed by now
        return self.newest_checkpoint

    def close(self):
        self.logger.close()


def frames_per_step(env_config):
    """Emulator frames per environment step: the Atari frame skip, 1 for other environments."""
    return getattr(env_config, 'frame_skip', 1)


def tracker_for(run_dir, config, extra_columns, trackables):
    """The RunTracker of a training config (its total_steps, log_every_seconds,
    checkpoint_every_steps and env_config), checkpointing trackables."""
    return RunTracker(
        run_dir, total_steps=config.total_steps, log_every_seconds=config.log_every_seconds,
        checkpoint_every_steps=config.checkpoint_every_steps, extra_columns=extra_columns,
        milestone_every_steps=config.milestone_every_steps,
        log_every_steps=getattr(config, 'log_every_steps', 0),
        frames_per_step=frames_per_step(config.env_config), trackables=trackables,
        session_stop=session_stop_lib.from_flags())
