"""`python -m common.compare RUN_DIR [RUN_DIR ...] [--csv PATH] [--plot OUT_DIR]`: one table
(and with --plot, learning-curve and throughput figures) across runs.

Reads only the common run format (invocation.json, operative_config.gin, metrics.csv, eval.csv),
so a run of any paper compares with a run of any other. A directory that cannot be read is named
on stderr; the others are still compared (exit status 2).
"""
import csv
import math
import os
import sys

from absl import flags

from common import app
from common import metrics
from common import run_files

COLUMNS = ('run', 'paper', 'game', 'env_steps', 'frames', 'hours', 'episodes',
           'score_mean_100', 'best_score_mean_100', 'steps_per_sec', 'eval_score_mean',
           'eval_env_steps')
flags.DEFINE_string('csv', None, 'Also write the table here.')
flags.DEFINE_string('plot', None, 'Also draw score_vs_frames.png, score_vs_hours.png and '
                                  'steps_per_sec.png (one line per run) into this directory.')


def summarize(run_dir):
    """One row of the comparison table for run_dir."""
    paper = run_files.read_paper(run_dir)
    rows = run_files.resumed_history(run_files.read_csv(os.path.join(run_dir, 'metrics.csv')))
    evals = run_files.read_csv(os.path.join(run_dir, 'eval.csv'))
    last = rows[-1] if rows else {}
    scores = [run_files.number(row['score_mean_100']) for row in rows]
    scores = [score for score in scores if not math.isnan(score)]
    rates = [run_files.number(row['steps_per_sec']) for row in rows]
    return {
        'run': os.path.basename(os.path.normpath(run_dir)),
        'paper': paper,
        'game': run_files.read_game(run_dir),
        'env_steps': int(run_files.number(last.get('env_steps', 0)) or 0),
        'frames': int(run_files.number(last.get('frames', 0)) or 0),
        'hours': run_files.number(last.get('wall_time')) / 3600,
        'episodes': int(run_files.number(last.get('episodes', 0)) or 0),
        'score_mean_100': scores[-1] if scores else math.nan,
        'best_score_mean_100': max(scores) if scores else math.nan,
        'steps_per_sec': float(sum(rates) / len(rates)) if rates else math.nan,
        'eval_score_mean': run_files.number(evals[-1]['score_mean']) if evals else math.nan,
        'eval_env_steps': int(run_files.number(evals[-1]['env_steps'])) if evals else 0,
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
        runs = [plots.load_run(run_dir, run_files.run_label(run_dir)) for run_dir in readable]
        for path in plots.plot_runs(runs, flags.FLAGS.plot):
            print(f'wrote {path}')
    return 2 if failures else 0


if __name__ == '__main__':
    app.run(main, takes_args=True)
