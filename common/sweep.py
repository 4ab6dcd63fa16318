"""`python -m common.sweep --gin_file=PRESET --grid="PAACConfig.num_envs = [16, 64, 256]"
--steps=N`: one preset over a grid of gin bindings, one run after another, and the papers' two
views of them.

Each --grid is one axis, a binding whose value is a list; the grid is their product, each point
an ordinary run directory SWEEP_DIR/<point name> (--names, else e.g. 'num_envs-16') trained to
--steps by the preset's own paper, its output prefixed with the point and its place. After each
point SWEEP_DIR holds score_vs_frames.png, score_vs_hours.png and steps_per_sec.png (a curve per
point) and sweep.md: the common.compare table and the env steps and hours at which each point's
100-episode mean first reached each threshold (--thresholds, default the game's in
common/tools/reference_scores.py). Rerunning the same command skips finished points and
resumes the unfinished one. Every point is configured before any trains, so a bad value is
refused in one line before anything starts. With --stop_at_score and/or --stop_at_minutes each
point ends there (and counts as done), e.g. seeds' time to a score:
`--grid="AccelConfig.seed = [0, 1, 2, 3, 4]" --stop_at_score=18 --stop_at_minutes=30`.
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import ast
import itertools
import os
import re

from absl import flags

from common import compare
from common.launch import app
from common.run import session_stop
from common.system import checks
from common.system import errors
from common.tools import child_runs
from common.tools import presets
from common.tools import reference_scores

FLAGS = flags.FLAGS
flags.DEFINE_multi_string('grid', [], "An axis of the grid: a binding whose value is a list, "
                          "e.g. 'PAACConfig.num_envs = [16, 64, 256]'; repeatable (the product).")
flags.DEFINE_list('names', None, 'Names of the grid points (their run directories), in grid '
                  'order; default: parameter-value, e.g. num_envs-16.')
flags.DEFINE_integer('steps', None, 'Env steps per point (--stop_at_steps of each run; the '
                     "preset's schedules still run over its total_steps).")
flags.DEFINE_string('sweep_dir', None, 'Where the points\' run directories go. Default: '
                    'runs/sweep-<paper>-<name of the last gin file>.')
flags.DEFINE_list('thresholds', None, "Scores to time, e.g. -15,0,18 (default: the game's).")
flags.DEFINE_float('stop_at_score', None, "Each point ends once its 100-episode mean reaches this "
                   "(its run's --stop_at_score) and is then done: seeds' time to a score.")
flags.DEFINE_float('stop_at_minutes', None, "Each point ends once its run's clock reaches this "
                   "many minutes (its run's --stop_at_minutes) and is then done.")

SWEEP_FILE = 'sweep.json'
_AXIS = re.compile(r'^\s*([A-Za-z_][\w.]*)\s*=\s*(\[.*\])\s*$', re.DOTALL)


def parse_axis(text):
    """(binding name, [value texts]) of one --grid; ConfigError in one line otherwise."""
    found = _AXIS.match(text)
    checks.require(found, f'--grid={text!r}: give a binding whose value is a list, e.g. '
                   "'PAACConfig.num_envs = [16, 64, 256]'")
    try:
        values = ast.literal_eval(found.group(2))
    except (ValueError, SyntaxError):
        raise errors.ConfigError(f'--grid={text!r}: {found.group(2)} is not a list of values '
                                 '(numbers, strings, tuples, None, True/False)') from None
    checks.require(len(values) > 0, f'--grid={text!r}: the list is empty')
    return found.group(1), [repr(value) for value in values]


def grid_points(axes, names):
    """[(name, [binding, ...])] of the product of the axes, in order; names given or made."""
    points = []
    for combination in itertools.product(*[[(name, value) for value in values]
                                           for name, values in axes]):
        made = '_'.join(f'{name.split(".")[-1]}-{value.strip(chr(39))}'
                        for name, value in combination)
        points.append((re.sub(r'[^\w.+-]+', '_', made),
                       [f'{name} = {value}' for name, value in combination]))
    if names is not None:
        checks.require(len(names) == len(points), f'--names gives {len(names)} names for '
                       f'{len(points)} grid points')
        points = [(name, bindings) for name, (_, bindings) in zip(names, points)]
    for name, _ in points:
        checks.require(name and os.sep not in name and not name.startswith('.'),
                       f'grid point name {name!r}: give a plain directory name')
    repeated = sorted({name for name, _ in points if [n for n, _ in points].count(name) > 1})
    checks.require(not repeated, f'grid point names repeat: {", ".join(repeated)}')
    return points


def plan():
    """(paper, sweep_dir, points, {point: config}), everything configured before anything
    starts; ConfigError in one line otherwise."""
    checks.require(FLAGS.gin_file, '--gin_file is required: a paper preset, e.g. '
                   'gin/paac/pong.gin')
    checks.require(FLAGS.grid, "--grid is required, e.g. --grid='PAACConfig.num_envs = [16, 64]'")
    checks.require(FLAGS.steps is not None and FLAGS.steps > 0,
                   f'--steps={FLAGS.steps!r}: give a positive number of env steps per point')
    points = grid_points([parse_axis(text) for text in FLAGS.grid], FLAGS.names)
    if FLAGS.thresholds:
        compare.parse_thresholds(FLAGS.thresholds)
    paper, main = presets.paper_of(FLAGS.gin_file, FLAGS.gin_bindings)
    configs = {}
    for name, bindings in points:
        configs[name] = main.configure(FLAGS.gin_file, list(FLAGS.gin_bindings) + bindings)
        checks.require(FLAGS.steps <= configs[name].total_steps,
                       f'--steps={FLAGS.steps:,} is past total_steps='
                       f'{configs[name].total_steps:,} of point {name}; bind '
                       f'{type(configs[name]).__name__}.total_steps higher')
    stem = os.path.splitext(os.path.basename(FLAGS.gin_file[-1]))[0]
    return (paper, FLAGS.sweep_dir or os.path.join('runs', f'sweep-{paper}-{stem}'), points,
            configs)


def write_views(sweep_dir, names, thresholds, heading):
    """The figures (a curve per point) and sweep.md of the points that have a run; the paths."""
    run_dirs = [os.path.join(sweep_dir, name) for name in names
                if os.path.isfile(os.path.join(sweep_dir, name, 'metrics.csv'))]
    if not run_dirs:
        return []
    from common.tools import plots  # pylint: disable=import-outside-toplevel  (matplotlib)
    runs = [plots.load_run(run_dir, os.path.basename(run_dir)) for run_dir in run_dirs]
    paths = plots.plot_runs(runs, sweep_dir, title=heading)
    lines = [f'# {heading}', '', '```', compare.format_table(
        [compare.summarize(run_dir) for run_dir in run_dirs]), '```', '']
    if thresholds:
        table = compare.time_to_score_rows(run_dirs, thresholds)
        lines += ['Env steps, wall-clock hours and own-clock hours to each 100-episode mean:', '',
                  '| ' + ' | '.join(table[0]) + ' |', '|' + '---|' * len(table[0])]
        lines += ['| ' + ' | '.join(row) + ' |' for row in table[1:]] + ['']
    lines += ['Figures: [score against frames](score_vs_frames.png), [score against hours]'
              '(score_vs_hours.png), [throughput](steps_per_sec.png).', '']
    path = os.path.join(sweep_dir, 'sweep.md')
    with open(path, 'w') as f:
        f.write('\n'.join(lines))
    return paths + [path]


def point_stop():
    """The SessionStop that ends each point (--stop_at_score, --stop_at_minutes), None without
    either; ConfigError in one line for a bad value."""
    if FLAGS.stop_at_score is None and FLAGS.stop_at_minutes is None:
        return None
    return session_stop.SessionStop(score=FLAGS.stop_at_score, minutes=FLAGS.stop_at_minutes)


def main():
    stop = point_stop()
    paper, sweep_dir, points, configs = plan()
    child_runs.open_record(sweep_dir, SWEEP_FILE, {
        'paper': paper, 'gin_files': list(FLAGS.gin_file),
        'gin_bindings': list(FLAGS.gin_bindings), 'points': [list(point) for point in points]},
        '--sweep_dir')
    game = next(iter(configs.values())).env_config
    game = getattr(game, 'game', None) or getattr(game, 'env_id', '?')
    thresholds = (compare.parse_thresholds(FLAGS.thresholds) if FLAGS.thresholds
                  else reference_scores.thresholds_of(game))
    heading = f'{paper} on {game}: {", ".join(FLAGS.grid)}, {FLAGS.steps:,} steps per point'
    names = [name for name, _ in points]
    for index, (name, bindings) in enumerate(points, 1):
        tag, run_dir = f'[{index}/{len(points)} {name}]', os.path.join(sweep_dir, name)
        target = min(FLAGS.steps, configs[name].total_steps)
        steps = child_runs.checkpoint_steps(run_dir)
        stopped = child_runs.stop_reached(run_dir, stop, steps)
        if steps >= target or stopped:
            print(f'{tag} done: {steps:,} steps' + (f' ({stopped})' if stopped else '') +
                  '; skipped', flush=True)
            continue
        print(f'{tag} point {index} of {len(points)} ({"; ".join(bindings)}): training to '
              f'{target:,} steps in {run_dir}' + (f' (resuming at {steps:,})' if steps else ''),
              flush=True)
        child_runs.train_in_turn(paper, FLAGS.gin_file, list(FLAGS.gin_bindings) + bindings,
                                 run_dir, target, tag, ('point', index, len(points), name),
                                 stop=stop)
        write_views(sweep_dir, names, thresholds, heading)
    for path in write_views(sweep_dir, names, thresholds, heading):
        print(f'wrote {path}')
    return 0


if __name__ == '__main__':
    app.execute(main)
