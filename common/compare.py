"""`python -m common.compare RUN_DIR [RUN_DIR ...] [--csv PATH]`: one table across runs.

Reads only the common run format (invocation.json, metrics.csv, episodes.csv, eval.csv), so a run
of any paper compares with a run of any other. Plots are not drawn (no plotting dependency).
"""
import csv
import json
import math
import os

from absl import flags

from common import app
from common import metrics

COLUMNS = ('run', 'paper', 'env_steps', 'frames', 'hours', 'episodes', 'score_mean_100',
           'best_score_mean_100', 'steps_per_sec', 'eval_score_mean', 'eval_env_steps')

flags.DEFINE_string('csv', None, 'Also write the table here.')


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
    if not os.path.isfile(os.path.join(run_dir, app.INVOCATION_FILE)):
        raise app.ConfigError(f'{run_dir!r} is not a run directory (no {app.INVOCATION_FILE})')
    with open(os.path.join(run_dir, app.INVOCATION_FILE)) as f:
        paper = json.load(f).get('paper', '?')
    rows = _read_csv(os.path.join(run_dir, 'metrics.csv'))
    evals = _read_csv(os.path.join(run_dir, 'eval.csv'))
    last = rows[-1] if rows else {}
    scores = [_number(row['score_mean_100']) for row in rows]
    scores = [score for score in scores if not math.isnan(score)]
    rates = [_number(row['steps_per_sec']) for row in rows]
    return {
        'run': os.path.basename(os.path.normpath(run_dir)),
        'paper': paper,
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
    if not run_dirs:
        app.fail('give one or more run directories: python -m common.compare RUN_DIR ...')
    summaries = [summarize(run_dir) for run_dir in run_dirs]
    print(format_table(summaries))
    if flags.FLAGS.csv:
        with open(flags.FLAGS.csv, 'w', newline='') as f:
            writer = csv.DictWriter(f, COLUMNS)
            writer.writeheader()
            writer.writerows(summaries)


if __name__ == '__main__':
    from absl import app as absl_app

    def _main(argv):
        try:
            main(argv[1:])
        except app.ConfigError as error:
            app.fail(str(error))

    absl_app.run(_main)
