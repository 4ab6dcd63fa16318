"""A run's two clocks: wall time as metrics.csv records it, and its own time, which leaves out
what the run lost to being held (SIGSTOP, a suspended laptop) or starved of CPU by other work.

Each metrics row covers one log interval. An interval far longer than the run's usual one
(HELD_FACTOR times the median) was held; one in which the machine had more runnable work than
cores (load_1m), or a virtual machine's host took STOLEN_PCT or more of its CPU time
(steal_pct), while the run got well under its usual CPU (run_cpu_cores) was starved. A
marked interval counts on the own clock only as the share of its usual CPU it got. Rows
written before these columns existed are marked unknown and count whole. The evaluation rounds
an interval holds (eval.csv: the clock at each round's start and its seconds) are the run's
own work, not a hold: they are taken out of the interval before it is judged and count whole.
"""
import json
import math
import os
import statistics

from common.launch import app
from common.run import run_record
from common.system import machine_load
from common.tools import run_files

HELD_FACTOR = 3.0
STARVED_CPU_SHARE = 0.8
STOLEN_PCT = machine_load.STOLEN_PCT


def read_cores(run_dir):
    """Usable cores of the machine the run last ran on (run.json), None if unrecorded."""
    try:
        with open(os.path.join(run_dir, app.RUN_FILE)) as f:
            return run_record.usable_cores(json.load(f))
    except (OSError, ValueError):
        return None


def _median(values):
    values = [value for value in values if not math.isnan(value)]
    return statistics.median(values) if values else math.nan


def _printed_half_unit(value):
    """Half the last printed digit of value as metrics.csv writes it (6 significant digits): how
    far the row's written wall_time may lie from the time it was taken."""
    if math.isnan(value) or value <= 0:
        return 0.0
    return 0.5 * 10.0 ** (math.floor(math.log10(value)) - 5)


def _evaluation_seconds(rows, evals):
    """Per metrics row, the seconds of the evaluation rounds (eval.csv rows) that ran within its
    interval: started (eval.csv's wall_time, the run's clock when the round began) at or after
    the previous row's wall_time and before its own. A round after the last row (a final
    evaluation) is in no interval. Rounds without a wall_time go by env_steps: after the
    previous row's, up to its own."""
    walls = [run_files.number(row.get('wall_time')) for row in rows]
    ends = [wall - _printed_half_unit(wall) for wall in walls]
    steps = [run_files.number(row.get('env_steps')) for row in rows]
    seconds = [0.0] * len(rows)
    for evaluation in evals:
        at, started, spent = (run_files.number(evaluation.get(key))
                              for key in ('env_steps', 'wall_time', 'seconds'))
        if math.isnan(spent):
            continue
        if not math.isnan(started):
            bounds, point = ends, started
            inside = lambda previous, current, point: previous <= point < current  # noqa: E731
        elif not math.isnan(at):
            bounds, point = steps, at
            inside = lambda previous, current, point: previous < point <= current  # noqa: E731
        else:
            continue
        for index, (previous, current) in enumerate(zip([-math.inf] + bounds[:-1], bounds)):
            if inside(previous, current, point):
                seconds[index] += spent
                break
    return seconds


def mark_rows(rows, cores, evals=()):
    """[(mark, wall seconds, own seconds)] per row; mark is '' (the run had the machine it
    usually has), 'held', 'starved' or '?' (no load columns). evals: eval.csv's rows, whose
    seconds count whole and out of the judging."""
    walls = [run_files.number(row.get('wall_time')) for row in rows]
    evaluations = _evaluation_seconds(rows, evals)
    intervals = [max(0.0, wall - previous - spent) for previous, wall, spent in
                 zip([0.0] + walls[:-1], walls, evaluations)]
    cpu = [run_files.number(row.get('run_cpu_cores')) for row in rows]
    loads = [run_files.number(row.get('load_1m')) for row in rows]
    steals = [run_files.number(row.get('steal_pct')) for row in rows]
    usual_interval, usual_cpu = _median(intervals), _median(cpu)
    marked = []
    for interval, spent, cores_used, load, steal in zip(intervals, evaluations, cpu, loads,
                                                          steals):
        if math.isnan(cores_used) or math.isnan(usual_cpu) or usual_cpu <= 0:
            marked.append(('?', interval + spent, interval + spent))
            continue
        share = min(1.0, cores_used / usual_cpu)
        held = interval > HELD_FACTOR * usual_interval
        crowded = (cores is not None and load > cores) or steal >= STOLEN_PCT  # nan: False
        starved = crowded and share < STARVED_CPU_SHARE
        mark = 'held' if held else 'starved' if starved else ''
        marked.append((mark, interval + spent, (interval * share if mark else interval) + spent))
    return marked


def own_hours(rows, cores, evals=()):
    """The own clock at each row, in hours."""
    total, hours = 0.0, []
    for _, _, own in mark_rows(rows, cores, evals):
        total += own
        hours.append(total / 3600)
    return hours


def time_to_scores(rows, cores, thresholds, evals=()):
    """{threshold: (env_steps, wall hours, own hours)} at the first row whose 100-episode mean
    reaches it; (None, nan, nan) if none does."""
    own = own_hours(rows, cores, evals)
    reached = {}
    for threshold in thresholds:
        reached[threshold] = (None, math.nan, math.nan)
        for row, own_at in zip(rows, own):
            if run_files.number(row.get('score_mean_100')) >= threshold:
                reached[threshold] = (int(run_files.number(row['env_steps'])),
                                      run_files.number(row['wall_time']) / 3600, own_at)
                break
    return reached


def steal_summary(rows):
    """(median, highest) steal_pct over the rows that have it, (nan, nan) when none does: how
    much of the machine a virtual machine's host took while the run ran."""
    steals = [value for value in (run_files.number(row.get('steal_pct')) for row in rows)
              if not math.isnan(value)]
    return (statistics.median(steals), max(steals)) if steals else (math.nan, math.nan)


def lost_share(rows, cores, evals=()):
    """(held or starved seconds lost, seconds in rows without load columns), of the wall time."""
    lost = unknown = 0.0
    for mark, wall, own in mark_rows(rows, cores, evals):
        lost += wall - own
        unknown += wall if mark == '?' else 0.0
    return lost, unknown
