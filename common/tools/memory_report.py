"""How a run's memory moved over its last session (metrics.csv's rss_mb, the resident memory of
the run's process tree): a soak's check for a leak, once the warm-up is over.

The warm-up is the session's first warmup_minutes and, for a run with a replay (replay_size),
the filling of that replay: a leak is growth after both, so the window starts at the first row
from which replay_size no longer changes. Memory counts as flat when its range over the window
stays within FLAT_SHARE of its value at the window's start.
"""
import math

from common.run import superseded
from common.tools import run_files

WARMUP_MINUTES = 10.0
FLAT_SHARE = 0.05
MIN_WINDOW_ROWS = 3

COLUMNS = ('run', 'window_start_steps', 'window_end_steps', 'window_minutes', 'start_mb',
           'min_mb', 'max_mb', 'end_mb', 'range_pct', 'mb_per_hour', 'verdict')


def last_session(rows):
    """The rows of the last session (from the last row marking a session's start; all rows for
    files written before session_start existed), those with rss_mb."""
    start = 0
    for index, row in enumerate(rows):
        if row.get(superseded.SESSION_START):
            start = index
    return [row for row in rows[start:] if not math.isnan(run_files.number(row.get('rss_mb')))]


def window_start(rows, warmup_minutes=WARMUP_MINUTES):
    """Index of the first of rows (one session's) past the warm-up: at least warmup_minutes after
    the session's first row and, where rows have replay_size, with the replay no longer filling
    (its size the same in every later row). len(rows) when no row is."""
    if not rows:
        return 0
    first = run_files.number(rows[0]['wall_time'])
    index = next((i for i, row in enumerate(rows)
                  if run_files.number(row['wall_time']) - first >= warmup_minutes * 60),
                 len(rows))
    sizes = [run_files.number(row.get('replay_size')) for row in rows]
    if any(not math.isnan(size) for size in sizes):
        filled = len(sizes) - 1
        while filled > 0 and sizes[filled - 1] == sizes[-1]:
            filled -= 1
        index = max(index, filled)
    return index


def _slope_per_hour(times, values):
    """Least-squares slope of values against times (seconds), per hour."""
    mean_t, mean_v = sum(times) / len(times), sum(values) / len(values)
    spread = sum((t - mean_t) ** 2 for t in times)
    if not spread:
        return math.nan
    return 3600 * sum((t - mean_t) * (v - mean_v) for t, v in zip(times, values)) / spread


def report(rows, run='', warmup_minutes=WARMUP_MINUTES):
    """One row of COLUMNS for a run's metrics rows: its last session's memory after the warm-up.
    The verdict is 'flat' (range within FLAT_SHARE of the start), 'grows' or 'moves' (the range
    is wider, with or without a rising trend), or says why there is no window."""
    session = last_session(superseded.resumed_history(rows))
    start = window_start(session, warmup_minutes)
    window = session[start:]
    result = dict.fromkeys(COLUMNS, math.nan)
    result['run'] = run
    if not session:
        result['verdict'] = 'no rss_mb column'
        return result
    if len(window) < MIN_WINDOW_ROWS:
        result['verdict'] = (f'no window: {len(window)} rows after the warm-up (at least '
                             f'{MIN_WINDOW_ROWS} needed)')
        return result
    times = [run_files.number(row['wall_time']) for row in window]
    memory = [run_files.number(row['rss_mb']) for row in window]
    share = (max(memory) - min(memory)) / memory[0]
    slope = _slope_per_hour(times, memory)
    hours = (times[-1] - times[0]) / 3600
    verdict = 'flat' if share <= FLAT_SHARE else (
        'grows' if slope * hours > FLAT_SHARE * memory[0] else 'moves')
    result.update({
        'window_start_steps': int(run_files.number(window[0]['env_steps'])),
        'window_end_steps': int(run_files.number(window[-1]['env_steps'])),
        'window_minutes': 60 * hours,
        'start_mb': memory[0], 'min_mb': min(memory), 'max_mb': max(memory),
        'end_mb': memory[-1], 'range_pct': 100 * share, 'mb_per_hour': slope,
        'verdict': verdict})
    return result
