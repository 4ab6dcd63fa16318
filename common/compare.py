"""`python -m common.compare RUN_DIR [RUN_DIR ...] [--csv PATH] [--plot OUT_DIR]`: one table
(and with --plot, learning-curve and throughput figures) across runs.

Reads only the common run format (invocation.json, operative_config.gin, metrics.csv, eval.csv),
so a run of any paper compares with a run of any other. A directory that cannot be read is named
on stderr; the others are still compared (exit status 2).
"""
import csv
import json
import math
import os
import re
import sys

from absl import flags

from common import app
from common import metrics

COLUMNS = ('run', 'paper', 'game', 'env_steps', 'frames', 'hours', 'episodes',
           'score_mean_100', 'best_score_mean_100', 'steps_per_sec', 'eval_score_mean',
           'eval_env_steps')
# The environment a run trained on, as its operative_config.gin records it.
_ENV_PATTERN = re.compile(r"^(?:AtariConfig\.game|GymConfig\.env_id) = '([^']+)'", re.MULTILINE)

flags.DEFINE_string('csv', None, 'Also write the table here.')
flags.DEFINE_string('plot', None, 'Also draw score_vs_frames.png, score_vs_hours.png and '
                                  'steps_per_sec.png (one line per run) into this directory.')


def _read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def summarize(run_dir):
    """One row of the comparison table for run_dir."""
    paper = read_paper(run_dir)
    rows = _read_csv(os.path.join(run_dir, 'metrics.csv'))
    evals = _read_csv(os.path.join(run_dir, 'eval.csv'))
    last = rows[-1] if rows else {}
    scores = [_number(row['score_mean_100']) for row in rows]
    scores = [score for score in scores if not math.isnan(score)]
    rates = [_number(row['steps_per_sec']) for row in rows]
    return {
        'run': os.path.basename(os.path.normpath(run_dir)),
        'paper': paper,
        'game': read_game(run_dir),
        'env_steps': int(_number(last.get('env_steps', 0)) or 0),
        'frames': int(_number(last.get('frames', 0)) or 0),
        'hours': _number(last.get('wall_time')) / 3600,
        'episodes': int(_number(last.get('episodes', 0)) or 0),
        'score_mean_100': scores[-1] if scores else math.nan,
        'best_score_mean_100': max(scores) if scores else math.nan,
        'steps_per_sec': float(sum(rates) / len(rates)) if rates else math.nan,
        'eval_score_mean': _number(evals[-1]['score_mean']) if evals else math.nan,
        'eval_env_steps': int(_number(evals[-1]['env_steps'])) if evals else 0,
    }


def read_paper(run_dir):
    """The paper recorded in run_dir's invocation.json; ConfigError if it is not a run."""
    path = os.path.join(run_dir, app.INVOCATION_FILE)
    if not os.path.isfile(path):
        raise app.ConfigError(f'{run_dir!r} is not a run directory (no {app.INVOCATION_FILE})')
    try:
        with open(path) as f:
            invocation = json.load(f)
    except (OSError, ValueError) as error:
        raise app.ConfigError(f'{path}: not readable as JSON ({error})')
    if not isinstance(invocation, dict):
        raise app.ConfigError(f'{path}: expected a JSON object, got {type(invocation).__name__}')
    return str(invocation.get('paper', '?'))


def read_game(run_dir):
    """The game (or gymnasium id) of run_dir's operative_config.gin, '?' where none is."""
    try:
        with open(os.path.join(run_dir, app.OPERATIVE_CONFIG_FILE)) as f:
            found = _ENV_PATTERN.search(f.read())
    except OSError:
        return '?'
    return found.group(1) if found else '?'


def run_label(run_dir):
    """How a run is named in figures: its paper and its directory name."""
    return f'{read_paper(run_dir)}: {os.path.basename(os.path.normpath(run_dir))}'


def format_table(summaries):
    def cell(value):
        if isinstance(value, float):
            return '-' if math.isnan(value) else f'{value:,.2f}'
        if isinstance(value, int):
            return metrics.format_count(value)
        return str(value)

    table = [COLUMNS] + [tuple(cell(row[column]) for column in COLUMNS) for row in summaries]
    widths = [max(len(line[index]) for line in table) for index in range(len(COLUMNS))]
    return '\n'.join('  '.join(text.ljust(width) for text, width in zip(line, widths))
                     for line in table)


def main(run_dirs):
    """Prints the table of the readable runs (and writes --csv, --plot); returns the exit
    status: 0, or 2 when a directory could not be read (each named on stderr)."""
    if not run_dirs:
        app.fail('give one or more run directories: python -m common.compare RUN_DIR ...')
    summaries, readable, failures = [], [], 0
    for run_dir in run_dirs:
        try:
            summaries.append(summarize(run_dir))
            readable.append(run_dir)
        except app.ConfigError as error:
            print(f'error: {error}', file=sys.stderr)
            failures += 1
    if summaries:
        print(format_table(summaries))
    if flags.FLAGS.csv and summaries:
        with open(flags.FLAGS.csv, 'w', newline='') as f:
            writer = csv.DictWriter(f, COLUMNS)
            writer.writeheader()
            writer.writerows(summaries)
    if flags.FLAGS.plot and summaries:
        from common import plots  # matplotlib only when asked for
        runs = [plots.load_run(run_dir, run_label(run_dir)) for run_dir in readable]
        for path in plots.plot_runs(runs, flags.FLAGS.plot):
            print(f'wrote {path}')
    return 2 if failures else 0


if __name__ == '__main__':
    app.run(main, takes_args=True)
