"""`python -m dqn_tf.reproduce`: fast DQN's speed experiments (Daley & Amato 2021, section 5.1,
Tables 1-3) at this machine's scale, written to docs/reproductions/fast_dqn.md with a figure.

Tables 1-3: the four modes x W in {1, 2, 4, 8} (synchronized modes from W = 2, as the paper), each
trained --steps steps on Pong at epsilon 0.1 (dqn_tf.speedtest's sessions), --trials times, the
trials taken round-robin over the cells so that the machine's drift touches every cell alike;
and the learner-only bound in every trial. The actors' rounds alone (random actions, no
inference, no training) for W in {1, 2, 4, 8} with the environments in the threads, in worker
processes and in ale_py's vector env (DQNConfig.actor_envs). Tables 1-3 once per --compute_dtypes (float32, the paper's,
and bfloat16, this CPU's faster learner), the dtypes alternated within every round. A cell that
fails is reported in its row; the rest go on.
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import os
import sys
import time

from absl import flags

from common.launch import app
from common.launch import config as launch_config
from common.system import checks
from common.system import devices
from common.tools import speed_report
from dqn_tf import config as config_lib
from dqn_tf import speedtest

# Table 1 (hours for 50M steps: 1M-step runtimes x 50, mean and std over five trials), Table 2
# (percent of standard W = 1) and Table 3 (speedup), as printed; the paper's GTX 1080 and i7-7700K.
PAPER = {('standard', 1): (25.08, 0.52, 100.0, 1.00), ('concurrent', 1): (20.64, 0.29, 82.3, 1.22),
         ('standard', 2): (19.10, 0.07, 76.2, 1.31), ('concurrent', 2): (14.00, 0.00, 55.8, 1.79),
         ('synchronized', 2): (19.32, 0.28, 77.0, 1.30), ('both', 2): (14.72, 0.13, 58.7, 1.70),
         ('standard', 4): (16.84, 0.09, 67.1, 1.49), ('concurrent', 4): (12.14, 0.05, 48.4, 2.07),
         ('synchronized', 4): (15.74, 0.21, 62.8, 1.59), ('both', 4): (11.08, 0.08, 44.2, 2.26),
         ('standard', 8): (16.92, 0.23, 67.5, 1.48), ('concurrent', 8): (11.68, 0.04, 46.6, 2.15),
         ('synchronized', 8): (14.60, 0.12, 58.2, 1.72), ('both', 8): (9.02, 0.16, 36.0, 2.78)}
CELLS = tuple(sorted(PAPER, key=lambda key: (key[1], list(config_lib.MODE_SWITCHES).index(key[0]))))
ACTOR_COUNTS = (1, 2, 4, 8)
PAPER_STEPS = 50_000_000  # Table 1's hours are for 50M steps (1M measured, x 50)


def _hours(seconds, steps):
    return seconds / steps * PAPER_STEPS / 3600


def measure_tables(steps, trials, game, prepopulate, actor_envs, stream,
                   compute_dtypes=('float32',)):
    """{compute dtype: ({(mode, W): Cell of seconds for `steps` steps}, the learner-only Cell)};
    every round takes each dtype's cells in turn, so drift touches both alike."""
    tables = {dtype: ({key: speed_report.Cell(_label(f'{key[0]} W={key[1]}', dtype))
                       for key in CELLS}, speed_report.Cell(_label('learner-only', dtype)))
              for dtype in compute_dtypes}

    def trial(key, dtype, first):
        config = speedtest.speedtest_config(*key, game=game, target_period=min(10_000, steps),
                                            prepopulate_steps=prepopulate,
                                            actor_envs=actor_envs, compute_dtype=dtype)
        with speedtest.Session(config) as session:
            if first:
                speed_report.measure(tables[dtype][1], lambda: session.learner_only(steps),
                                     stream)
            return session.run(steps)

    for index in range(trials):
        for dtype, (cells, _) in tables.items():
            for position, key in enumerate(CELLS):
                speed_report.measure(cells[key], lambda: trial(key, dtype, position == 0), stream)
                if cells[key].values and cells[key].error is None:
                    print(f'trial {index + 1}/{trials} {cells[key].label}: '
                          f'{cells[key].values[-1]:.2f} s', file=stream, flush=True)
    return tables


def _label(text, dtype):
    return text if dtype == 'float32' else f'{text} ({dtype})'


def measure_actors(steps, trials, game, prepopulate, stream):
    """{(W, where): Cell of the actors' random steps per second}."""
    cells = {(count, where): speed_report.Cell(f'W={count} in {where}')
             for count in ACTOR_COUNTS for where in config_lib.ACTOR_ENVS}

    def trial(count, where):
        config = speedtest.speedtest_config('both', count, game=game, prepopulate_steps=prepopulate,
                                            actor_envs=where)
        with speedtest.Session(config, warm_up=False) as session:
            return steps / session.actors_only(steps)

    for _ in range(trials):
        for (count, where), cell in cells.items():
            speed_report.measure(cell, lambda: trial(count, where), stream)
    return cells


def tables_experiment(cells, learner, steps, trials, figure, compute_dtype='float32'):
    """Tables 1-3 in one table, ours beside the paper's, and the speedups drawn."""
    baseline = cells[('standard', 1)].mean
    rows, ours, theirs = [], [], []
    for key in CELLS:
        cell, paper = cells[key], PAPER[key]
        if not cell.measured:
            rows.append([key[0], key[1], f'failed: {cell.error}', '', f'{paper[0]:.2f}', '', '',
                         '', f'{paper[3]:.2f}x', ''])
            ours.append(float('nan'))
            theirs.append(paper[3])
            continue
        speedup = baseline / cell.mean
        rows.append([key[0], key[1], f'{_hours(cell.mean, steps):.1f} +- '
                     f'{_hours(cell.std, steps):.1f}', f'{100 * cell.spread:.1f}%',
                     f'{paper[0]:.2f} +- {paper[1]:.2f}', f'{100 * cell.mean / baseline:.1f}%',
                     f'{paper[2]:.1f}%', f'{speedup:.2f}x', f'{paper[3]:.2f}x',
                     f'{cell.mean / learner.mean:.2f}' if learner.values else '-'])
        ours.append(speedup)
        theirs.append(paper[3])
    table = speed_report.markdown_table(
        ['mode', 'W', 'hours / 50M (ours)', 'spread', 'hours (paper, Table 1)',
         '% of standard W=1 (ours)', '(paper, Table 2)', 'speedup (ours)', '(paper, Table 3)',
         'ours / learner-only'], rows)
    learner_note = (f'Learner-only bound (the steps/F minibatches alone): '
                    f'{_hours(learner.mean, steps):.1f} +- {_hours(learner.std, steps):.1f} '
                    f'hours per 50M steps.' if learner.values else
                    f'Learner-only bound failed: {learner.error}.')
    speed_report.grouped_bars(figure, [f'{mode} W={count}' for mode, count in CELLS],
                              [('ours', ours), ('paper (GTX 1080)', theirs)],
                              'speedup over standard W=1',
                              _label('Fast DQN, Table 3', compute_dtype))
    dtype_note = ('' if compute_dtype == 'float32' else
                  f' The networks compute in {compute_dtype} (DQNConfig.compute_dtype; variables '
                  'and Q values stay float32), not a setting of the paper.')
    return speed_report.Experiment(
        _label('Tables 1-3: runtime by mode and actor threads', compute_dtype),
        f'{steps:,} steps per trial (the paper: 1M, x 50), {trials} trials per cell, hours '
        'scaled the same way; a CPU learner with no GPU (the paper: GTX 1080 and a 4-core '
        'i7-7700K), so here the update bounds every mode and no actor change can go past the '
        f'learner-only time.{dtype_note}', table, os.path.basename(figure), learner_note)


def actors_experiment(cells, steps, figure):
    """The actors' rounds alone, by W and where the environments step."""
    rows, series = [], {where: [] for where in config_lib.ACTOR_ENVS}
    base = {where: cells[(1, where)].mean for where in config_lib.ACTOR_ENVS}
    for (count, where), cell in cells.items():
        if not cell.measured:
            rows.append([count, where, f'failed: {cell.error}', '', ''])
            series[where].append(float('nan'))
            continue
        rows.append([count, where, f'{cell.mean:,.0f} +- {cell.std:,.0f}',
                     f'{100 * cell.spread:.1f}%', f'{cell.mean / base[where]:.2f}x'])
        series[where].append(cell.mean)
    speed_report.grouped_bars(figure, [f'W={count}' for count in ACTOR_COUNTS],
                              [(f'envs in {where}', values) for where, values in series.items()],
                              'random steps per second', 'Fast DQN actors alone')
    return speed_report.Experiment(
        "Actor rounds alone: the W environments in threads, processes or ale_py's vector env",
        f"not in the paper, whose W threads emulate side by side through atari-py's ctypes "
        f"calls; ale_py holds the GIL, so in-thread actors emulate one at a time here, "
        f"processes pay a pipe round trip per step, and the vector env steps all W in C++ "
        f"threads in one call. {steps:,} random steps per trial (no inference, no training); the paper prints no "
        "such table.", speed_report.markdown_table(
            ['W', 'environments in', 'steps/s', 'spread', 'x W=1 (same place)'], rows),
        os.path.basename(figure))


def main():
    flags_ = flags.FLAGS
    checks.require(flags_.steps > 0 and flags_.steps % 8 == 0,
                   f'--steps={flags_.steps}; must be a positive multiple of 8 (F = 4, W <= 8)')
    checks.require(flags_.trials >= 2, f'--trials={flags_.trials}; must be >= 2 (a spread)')
    checks.require(flags_.actor_steps > 0 and flags_.actor_steps % 8 == 0,
                   f'--actor_steps={flags_.actor_steps}; must be a positive multiple of 8')
    checks.require(flags_.actor_envs in config_lib.ACTOR_ENVS,
                   f'--actor_envs={flags_.actor_envs}; allowed: '
                   f'{", ".join(config_lib.ACTOR_ENVS)}')
    dtypes = flags_.compute_dtypes
    checks.require(dtypes and set(dtypes) <= set(launch_config.COMPUTE_DTYPES)
                   and len(set(dtypes)) == len(dtypes),
                   f'--compute_dtypes={",".join(dtypes)}; allowed: a list without repeats of '
                   f'{", ".join(launch_config.COMPUTE_DTYPES)}')
    out = flags_.out
    start = time.perf_counter()
    devices.set_intra_op_threads(speedtest.speedtest_config(
        'standard', 1, prepopulate_steps=flags_.prepopulate).intra_op_threads())
    tables = measure_tables(flags_.steps, flags_.trials, flags_.game, flags_.prepopulate,
                            flags_.actor_envs, sys.stdout, tuple(flags_.compute_dtypes))
    actors = measure_actors(flags_.actor_steps, flags_.trials, flags_.game,
                                flags_.prepopulate, sys.stdout)
    directory = os.path.dirname(os.path.abspath(out))
    os.makedirs(directory, exist_ok=True)
    experiments = [
        tables_experiment(cells, learner, flags_.steps, flags_.trials, os.path.join(
            directory, 'fast_dqn_tables.png' if dtype == 'float32' else
            f'fast_dqn_tables_{dtype}.png'), dtype)
        for dtype, (cells, learner) in tables.items()]
    experiments.append(actors_experiment(actors, flags_.actor_steps,
                                           os.path.join(directory, 'fast_dqn_actors.png')))
    speed_report.write_command_report(out, 'Fast DQN (Daley & Amato 2021)', 'dqn_tf.reproduce',
                                      experiments, start)


if __name__ == '__main__':
    flags.DEFINE_integer('steps', 2000, 'Training steps per trial of a cell (paper: 1M).')
    flags.DEFINE_integer('trials', 5, 'Trials per cell (paper: 5).')
    flags.DEFINE_integer('actor_steps', 4000, 'Random steps per trial of the actors alone.')
    flags.DEFINE_integer('prepopulate', 1000, 'Untimed random steps before each trial.')
    flags.DEFINE_string('actor_envs', 'thread', 'Where the actors step in Tables 1-3 '
                        '(DQNConfig.actor_envs).')
    flags.DEFINE_string('game', 'pong', 'Atari game (section 5.1: Pong).')
    flags.DEFINE_list('compute_dtypes', ['float32', 'bfloat16'], 'A Tables 1-3 table for each '
                      '(DQNConfig.compute_dtype; the paper: float32).')
    flags.DEFINE_string('out', os.path.join(app.PROJECT_ROOT, 'docs/reproductions/fast_dqn.md'),
                        'The report; its figures go beside it.')
    app.execute(main)
