"""Run metrics: episode statistics, interval rates, and the writers of the common run format.

metrics.csv and episodes.csv are appended to (a resumed run continues them), the console gets one
progress line per log interval, and TensorBoard gets the same scalars. A value that is absent
(no episode or no update yet) is None and an empty cell; a NaN one is written as nan.
"""
import collections
import csv
import math
import os
import sys
import time

import numpy as np

from common.run import scalars
from common.system import errors
from common.system import file_writes
from common.system import machine_load

# load_1m, run_cpu_cores and steal_pct say what the run got of the machine, rss_mb what its
# process tree holds (common/system/machine_load.py).
BASE_METRIC_COLUMNS = ('wall_time', 'env_steps', 'frames', 'updates', 'episodes',
                       'score_mean_100', 'steps_per_sec', 'updates_per_sec', 'load_1m',
                       'run_cpu_cores', 'steal_pct', 'rss_mb')
EPISODE_COLUMNS = ('wall_time', 'env_steps', 'score', 'length')


class EpisodeStats:
    """Finished-episode scores and lengths, with the mean of the most recent 100 scores (None
    before the first)."""

    def __init__(self, window=100):
        self.recent_scores = collections.deque(maxlen=window)
        self.count = 0

    def add(self, score, length):
        self.recent_scores.append(float(score))
        self.count += 1

    @property
    def mean_score(self):
        return float(np.mean(self.recent_scores)) if self.recent_scores else None


class StopWatch:
    """Accumulates wall time per named part of a time step (env / act / learn) between two
    reads."""

    def __init__(self):
        self.totals = collections.defaultdict(float)

    def add(self, part, seconds):
        self.totals[part] += seconds

    def take(self):
        """Returns the accumulated seconds per part and starts a new interval."""
        totals, self.totals = dict(self.totals), collections.defaultdict(float)
        return totals


class _CsvAppender:
    """Appends rows to a CSV file, writing the header only when the file is new. A file whose
    columns are all among this run's (a run begun before columns were added) is rewritten once
    with this run's columns, in their order, its rows empty in the new ones."""

    def __init__(self, path, columns):
        self.columns = tuple(columns)
        is_new = not os.path.exists(path) or os.path.getsize(path) == 0
        if not is_new:
            with open(path, newline='') as f:
                existing = next(csv.reader(f), None)
            if existing is not None and tuple(existing) != self.columns:
                if not set(existing) <= set(self.columns) or len(set(existing)) < len(existing):
                    raise errors.ConfigError(f'{path} has columns {existing}, this run writes '
                                             f'{list(self.columns)}; use another --run_dir')
                _add_columns(path, self.columns)
        self.path = path
        with file_writes.naming(path):
            self._file = open(path, 'a', newline='')  # pylint: disable=consider-using-with
            self._writer = csv.writer(self._file)
            if is_new:
                self._writer.writerow(self.columns)
                self._file.flush()

    def write(self, row):
        with file_writes.naming(self.path):
            self._writer.writerow([_format(row.get(column, '')) for column in self.columns])
            self._file.flush()

    def close(self):
        with file_writes.naming(self.path):
            self._file.close()


def _add_columns(path, columns):
    """Rewrites the CSV at path with the header `columns` (its own columns among them, each
    value kept under its name): written beside it and renamed over it, so a crash leaves the old
    file or the new one."""
    with open(path, newline='') as f:
        header, *rows = list(csv.reader(f))
    temporary = f'{path}.columns-added'
    with file_writes.naming(path):
        with open(temporary, 'w', newline='') as f:
            writer = csv.writer(f)
            writer.writerow(columns)
            for row in rows:
                named = dict(zip(header, row))
                writer.writerow([named.get(column, '') for column in columns])
        os.replace(temporary, path)


def _format(value):
    if value is None:
        return ''
    if isinstance(value, float):
        return f'{value:.6g}'  # nan and inf as such: what the run saw
    return value


def format_duration(seconds):
    if seconds is None or not math.isfinite(seconds):
        return '?'
    seconds = int(seconds)
    return f'{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}'


def format_count(value):
    if value >= 1e6:
        return f'{value / 1e6:.2f}M'
    if value >= 1e4:
        return f'{value / 1e3:.0f}k'
    return str(int(value))


# The progress line's ETA: the rate over this many seconds of a session's rows.
ETA_WINDOW_SECONDS = 600.0


class RunLogger:
    """Writes metrics.csv, episodes.csv, TensorBoard scalars and the console progress line."""

    def __init__(self, run_dir, extra_columns=(), total_steps=None, tensorboard=True,
                 stream=sys.stdout, session_end_steps=None):
        self.total_steps = total_steps
        # --stop_at_steps below total_steps: the progress line counts to it and its ETA is this
        # session's, with the run's total beside it.
        self.session_end_steps = session_end_steps
        self._recent = collections.deque()  # (wall_time, env_steps) of this session's rows
        self.stream = stream
        self.run_dir = run_dir
        os.makedirs(run_dir, exist_ok=True)
        self.metrics = _CsvAppender(os.path.join(run_dir, 'metrics.csv'),
                                    BASE_METRIC_COLUMNS + tuple(extra_columns))
        self.episodes = _CsvAppender(os.path.join(run_dir, 'episodes.csv'), EPISODE_COLUMNS)
        self._summary_writer = None
        if tensorboard:
            import tensorflow as tf  # Only the training process writes TensorBoard events.
            try:
                self._summary_writer = tf.summary.create_file_writer(run_dir)
            except tf.errors.OpError as error:
                self.metrics.close()
                self.episodes.close()
                raise _cannot_write(run_dir, error) from None

    def log_episode(self, wall_time, env_steps, score, length):
        self.episodes.write({'wall_time': wall_time, 'env_steps': env_steps, 'score': score,
                             'length': length})

    def log_interval(self, row):
        """row holds BASE_METRIC_COLUMNS plus extras; prints the progress line."""
        self.metrics.write(row)
        if self._summary_writer is not None:
            import tensorflow as tf
            step = scalars.uncached(row['env_steps'], np.int64)
            try:
                with self._summary_writer.as_default(step=step):
                    for name, value in row.items():
                        if name not in ('wall_time', 'env_steps') and _is_number(value):
                            tf.summary.scalar(name, scalars.uncached(value, np.float64))
                self._summary_writer.flush()
            except tf.errors.OpError as error:
                raise _cannot_write(self.run_dir, error) from None
        self.stream.write(self.progress_line(row, self._windowed_rate(row)) + '\n')
        self.stream.flush()

    def _windowed_rate(self, row):
        """Steps per second over this session's rows of the last ETA_WINDOW_SECONDS, so that an
        evaluation's or a synchronization's pause moves the ETA little; the row's own rate
        until a second row."""
        recent = self._recent
        recent.append((row['wall_time'], row['env_steps']))
        while len(recent) > 2 and row['wall_time'] - recent[1][0] >= ETA_WINDOW_SECONDS:
            recent.popleft()
        seconds = row['wall_time'] - recent[0][0]
        return (row['env_steps'] - recent[0][1]) / seconds if seconds > 0 else row['steps_per_sec']

    def progress_line(self, row, eta_rate=None):
        """The console line of row; its ETA at eta_rate steps per second (default: the row's
        rate)."""
        steps, rate = row['env_steps'], row['steps_per_sec']
        eta_rate = rate if eta_rate is None else eta_rate
        end = self.total_steps
        total = f'/{format_count(end)}' if end else ''
        session_end = self.session_end_steps
        if session_end and (not end or session_end < end):
            total = f'/{format_count(session_end)}' + (f' (run {format_count(end)})' if end
                                                       else '')
            end = session_end
        # A run's last interval can pass its end (whole rounds or horizon batches): ETA 0 then.
        eta = max(end - steps, 0) / eta_rate if end and eta_rate > 0 else float('nan')
        score = row['score_mean_100']
        score_text = 'n/a' if score is None else f'{score:.1f}'
        line = (f'steps {format_count(steps)}{total} | {rate:,.0f} steps/s | '
                f'score(100) {score_text} | episodes {row["episodes"]} | '
                f'elapsed {format_duration(row["wall_time"])} | ETA {format_duration(eta)}')
        stolen = row.get('steal_pct')
        if stolen is not None and stolen >= machine_load.STOLEN_PCT:  # a slow row explained
            line += f" | the VM's host took {stolen:.0f}% of the CPU"
        return line

    def close(self):
        self.metrics.close()
        self.episodes.close()
        if self._summary_writer is not None:
            self._summary_writer.close()


def _cannot_write(run_dir, error):
    return errors.RunError(f'cannot write TensorBoard events in {run_dir} '
                           f'({errors.describe_tf_error(error)}); what the run wrote before is '
                           'kept')


def _is_number(value):
    return isinstance(value, (int, float, np.integer, np.floating))


class Clock:
    """Wall time of a run that survives resumes: the elapsed seconds restored plus this
    session's."""

    def __init__(self, elapsed_before=0.0):
        self.elapsed_before = float(elapsed_before)
        self._start = time.perf_counter()

    def elapsed(self):
        return self.elapsed_before + time.perf_counter() - self._start
