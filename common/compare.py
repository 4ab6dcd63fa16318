"""`python -m common.compare RUN_DIR [RUN_DIR ...] [--thresholds ...] [--memory] [--csv PATH]
[--plot DIR]`: one table (and with --plot, learning-curve and throughput figures) across runs,
per game.

Reads only the common run format (invocation.json, operative_config.gin, metrics.csv, eval.csv),
so a run of any paper compares with a run of any other. Runs of different games are never in one
table or figure, as their scores are on different scales: each game gets its tables (after a
'game: NAME' line when there are several) and its figures (named with a '-NAME' suffix when
there are several; one game keeps the plain names). --csv writes one file with a game column. A
directory that cannot be read is named on stderr; the others are still compared (exit status 2).

Runs that differ only in seed (same paper, game and operative_config.gin but for its lines binding
a `seed`) are then aggregated as rliable does (Agarwal et al. 2021; common/tools/seed_stats.py),
when two or more are given: per group the mean final score_mean_100 over its seeds with a
percentile-bootstrap 95% interval, and per configuration on two or more games the IQM of
human-normalized scores with a stratified bootstrap interval (naming the games it leaves out).
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import csv
import math
import os
import sys

from absl import flags

from common.launch import app
from common.run import metrics
from common.run import superseded
from common.system import checks
from common.system import errors
from common.tools import memory_report
from common.tools import run_clock
from common.tools import run_files
from common.tools import seed_stats

COLUMNS = ('run', 'paper', 'game', 'env_steps', 'frames', 'hours', 'own_hours', 'episodes',
           'score_mean_100', 'best_score_mean_100', 'steps_per_sec', 'eval_score_mean',
           'eval_env_steps', 'best_eval_score_mean', 'best_eval_env_steps')


def group_by_game(run_dirs):
    """{game: [run_dir, ...]} by run_files.read_game, Pong first (every run published so far),
    then alphabetical; runs keep their order. Tables and figures are made per game."""
    groups = {}
    for run_dir in run_dirs:
        groups.setdefault(run_files.read_game(run_dir), []).append(run_dir)
    order = sorted(groups, key=lambda game: (game != 'pong', game.lower(), game))
    return {game: groups[game] for game in order}


def summarize(run_dir):
    """One row of the comparison table for run_dir."""
    paper = run_files.read_paper(run_dir)
    rows = superseded.read_history(os.path.join(run_dir, 'metrics.csv'))
    evals = run_files.read_csv(os.path.join(run_dir, 'eval.csv'))
    last = rows[-1] if rows else {}
    scores = [run_files.number(row['score_mean_100']) for row in rows]
    scores = [score for score in scores if not math.isnan(score)]
    rates = [run_files.number(row['steps_per_sec']) for row in rows]
    scored = [row for row in evals if not math.isnan(run_files.number(row.get('score_mean')))]
    best = max(scored, key=lambda row: run_files.number(row['score_mean'])) if scored else None
    return {
        'run': os.path.basename(os.path.normpath(run_dir)),
        'paper': paper,
        'game': run_files.read_game(run_dir),
        'env_steps': int(run_files.number(last.get('env_steps', 0)) or 0),
        'frames': int(run_files.number(last.get('frames', 0)) or 0),
        'hours': run_files.number(last.get('wall_time')) / 3600,
        'own_hours': (run_clock.own_hours(rows, run_clock.read_cores(run_dir), evals)[-1] if rows
                      else math.nan),
        'episodes': int(run_files.number(last.get('episodes', 0)) or 0),
        'score_mean_100': scores[-1] if scores else math.nan,
        'best_score_mean_100': max(scores) if scores else math.nan,
        'steps_per_sec': float(sum(rates) / len(rates)) if rates else math.nan,
        'eval_score_mean': run_files.number(evals[-1]['score_mean']) if evals else math.nan,
        'eval_env_steps': int(run_files.number(evals[-1]['env_steps'])) if evals else 0,
        # The best round, as fast DQN reports (section 5.2: "the best mean performance").
        'best_eval_score_mean': run_files.number(best['score_mean']) if best else math.nan,
        'best_eval_env_steps': int(run_files.number(best['env_steps'])) if best else 0,
    }


def _cell(value):
    if isinstance(value, float):
        return '-' if math.isnan(value) else f'{value:,.2f}'
    if isinstance(value, int):
        return metrics.format_count(value)
    return str(value)


def _aligned(table):
    widths = [max(len(line[index]) for line in table) for index in range(len(table[0]))]
    return '\n'.join('  '.join(text.ljust(width) for text, width in zip(line, widths)).rstrip()
                     for line in table)


def format_table(summaries):
    table = [COLUMNS] + [tuple(_cell(row[column]) for column in COLUMNS) for row in summaries]
    return _aligned(table)


def parse_thresholds(texts):
    """--thresholds as floats; ConfigError naming a value that is not a number."""
    values = []
    for text in texts:
        value = run_files.number(text)
        checks.require(math.isfinite(value),
                       f'--thresholds={text!r} is not a score; give numbers, e.g. -15,0,18')
        values.append(value)
    return values


def time_to_score_rows(run_dirs, thresholds):
    """Per run: name, then per threshold 'steps / wall h / own h' (or 'not reached'), then the
    hours lost to holds or starvation, the hours with no load columns, the median and highest
    share of the machine's CPU its host took (steal_pct: an idle machine's is near 0) and the
    machines its sessions ran on (the same code runs 2-4x apart on the CPUs here)."""
    header = ['run'] + [f'score {threshold:g}: steps, wall h, own h' for threshold in thresholds]
    header += ['held/starved h', 'unrecorded h', 'host steal % (median, max)', 'machine']
    table = [header]
    for run_dir in run_dirs:
        rows = superseded.read_history(os.path.join(run_dir, 'metrics.csv'))
        cores = run_clock.read_cores(run_dir)
        evals = run_files.read_csv(os.path.join(run_dir, 'eval.csv'))
        reached = run_clock.time_to_scores(rows, cores, thresholds, evals)
        cells = [os.path.basename(os.path.normpath(run_dir))]
        for threshold in thresholds:
            steps, wall, own = reached[threshold]
            cells.append('not reached' if steps is None else
                         f'{metrics.format_count(steps)}, {wall:.2f}, {own:.2f}')
        lost, unknown = run_clock.lost_share(rows, cores, evals)
        steal = run_clock.steal_summary(rows)
        cells += [f'{lost / 3600:.2f}', f'{unknown / 3600:.2f}',
                  '?' if math.isnan(steal[0]) else f'{steal[0]:.1f}, {steal[1]:.1f}',
                  '; '.join(run_files.machines(run_dir)) or '?']
        table.append(cells)
    return table


def format_time_to_score(run_dirs, thresholds):
    return _aligned(time_to_score_rows(run_dirs, thresholds))


def format_memory(run_dirs, warmup_minutes):
    """The memory table (common/tools/memory_report.py): per run, its last session's rss_mb after
    the warm-up, and whether it stayed flat."""
    rows = [memory_report.report(run_files.read_csv(os.path.join(run_dir, 'metrics.csv')),
                                 os.path.basename(os.path.normpath(run_dir)), warmup_minutes)
            for run_dir in run_dirs]
    table = [memory_report.COLUMNS] + [
        tuple(_cell(row[column]) for column in memory_report.COLUMNS) for row in rows]
    return (f'memory of the last session after the warm-up ({warmup_minutes:g} min, and a replay '
            f'full), flat within {100 * memory_report.FLAT_SHARE:g}%\n' + _aligned(table))


def _operative_config(run_dir):
    try:
        with open(os.path.join(run_dir, app.OPERATIVE_CONFIG_FILE)) as f:
            return f.read()
    except OSError:
        return None


def seed_rows(summaries_and_dirs, reps=seed_stats.REPS):
    """The table of the groups of two or more runs that differ only in seed (first run, runs,
    game, seeds, mean score_mean_100 and its 95% interval), then per configuration on two or
    more such games a row of the IQM of human-normalized scores; None when there is no group."""
    runs = []
    for row, run_dir in summaries_and_dirs:
        config = _operative_config(run_dir)
        runs.append(dict(run=row['run'], game=row['game'], score=row['score_mean_100'],
                         config=None if config is None else f"# paper {row['paper']}\n{config}"))
    groups = [group for group in seed_stats.group_seeds(runs) if len(group['runs']) > 1]
    if not groups:
        return None
    table = [('first run', 'runs', 'game', 'seeds', 'score_mean_100', 'ci95_low', 'ci95_high')]
    algorithms = {}
    for group in groups:
        table.append((group['runs'][0], str(len(group['runs'])), group['game'],
                      ', '.join(group['seeds']),
                      *(_cell(value) for value in seed_stats.group_row(group, reps))))
        algorithms.setdefault(group['algorithm'], []).append(group)
    for same in (same for same in algorithms.values() if len(same) > 1):
        point, low, high, used, left_out = seed_stats.iqm_over_games(same, reps)
        games = ', '.join(used) + (f"; left out (no human score): {', '.join(left_out)}"
                                   if left_out else '')
        table.append((f"IQM human-normalized % ({same[0]['runs'][0]})",
                      str(sum(len(group['runs']) for group in same)), games, '-',
                      *(_cell(math.nan if value is None else value)
                        for value in (point, low, high))))
    return table


def main(run_dirs):
    """Prints the table of the readable runs (and writes --csv, --plot); returns the exit
    status: 0, or 2 when a directory could not be read (each named on stderr)."""
    if not run_dirs:
        app.fail('give one or more run directories: python -m common.compare RUN_DIR ...')
    thresholds = parse_thresholds(flags.FLAGS.thresholds or [])
    summaries, readable, failures = [], [], 0
    for run_dir in run_dirs:
        try:
            summaries.append(summarize(run_dir))
            readable.append(run_dir)
        except errors.ConfigError as error:
            print(f'error: {error}', file=sys.stderr)
            failures += 1
    summary_of = dict(zip(readable, summaries))
    groups = group_by_game(readable)
    for index, (game, game_dirs) in enumerate(groups.items()):
        if len(groups) > 1:
            print(('\n' if index else '') + f'game: {game}')
        print(format_table([summary_of[run_dir] for run_dir in game_dirs]))
        if thresholds:
            print()
            print(format_time_to_score(game_dirs, thresholds))
    if flags.FLAGS.memory:
        print('\n' + format_memory(readable, flags.FLAGS.warmup_minutes))
    seeds = seed_rows([(summary_of[run_dir], run_dir) for run_dir in readable])
    if seeds:
        print('\nruns that differ only in seed (mean and percentile-bootstrap 95% interval)')
        print(_aligned(seeds))
    if flags.FLAGS.csv and summaries:
        with open(flags.FLAGS.csv, 'w', newline='') as f:
            writer = csv.DictWriter(f, COLUMNS)
            writer.writeheader()
            writer.writerows(summaries)
    if flags.FLAGS.plot and summaries:
        from common.tools import plots  # matplotlib only when asked for
        for game, game_dirs in groups.items():
            runs = [plots.load_run(run_dir, run_files.run_label(run_dir)) for run_dir in game_dirs]
            suffix = plots.file_suffix(game) if len(groups) > 1 else ''
            for path in plots.plot_runs(runs, flags.FLAGS.plot, title=game, suffix=suffix):
                print(f'wrote {path}')
            memory = plots.plot_memory(runs, flags.FLAGS.plot, title=game, suffix=suffix)
            if memory:
                print(f'wrote {memory}')
    return 2 if failures else 0


def define_flags():
    """--csv, --plot and --thresholds, defined when this runs as the command (importing it, as
    common.results and common.sweep do, defines none)."""
    flags.DEFINE_string('csv', None, 'Also write the table here.')
    flags.DEFINE_string('plot', None, 'Also draw score_vs_frames.png, score_vs_hours.png, '
                        'steps_per_sec.png and, for runs that recorded it, rss_mb.png (memory '
                        'against steps; one line per run) into this directory; with several '
                        'games, per game: score_vs_hours-breakout.png, ...')
    flags.DEFINE_list('thresholds', None, 'Also print, per run, the env steps and hours (wall '
                      'clock, and the own clock: held or starved time left out) at which the '
                      '100-episode mean first reached each of these scores, e.g. -15,0,18 (the '
                      'same scores for every game).')
    flags.DEFINE_bool('memory', False, 'Also print, per run, how its memory (rss_mb: the '
                      "process tree's resident memory) moved over its last session after the "
                      'warm-up, and whether it stayed flat: a soak\'s check for a leak.')
    flags.DEFINE_float('warmup_minutes', memory_report.WARMUP_MINUTES, 'With --memory: the '
                       "minutes of a session's start left out (a replay's filling is left out "
                       'too).', lower_bound=0)


if __name__ == '__main__':
    define_flags()
    app.execute(main, takes_args=True)
