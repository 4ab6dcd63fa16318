"""`python -m accel_tf.reproduce`: Stooke & Abbeel's sampling experiments (2018, section 5
"Sampling": Figure 1b; Appendix A.2: Table 3) at this machine's scale, written to
docs/reproductions/accelerated_methods.md with a figure.

Figure 1b: sampling speed per core against simulators per core, the A3C-Net choosing every action
(no learning), for 1 and 2 cores (this process and its workers confined to them) and each
sampler, beside workers stepping without inference. Table 3: two samplers, each with its own worker and its own inference
calls (the paper: one per GPU), with a barrier between them every five steps (synchronized) or
running independently (asynchronous). Each cell takes --trials trials round-robin; a cell that
fails is reported in its row and the rest go on.
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import contextlib
import os
import sys
import threading
import time

from absl import flags

from accel_tf import bench_rows
from accel_tf import kinds
from accel_tf import learners
from common import bench
from common.launch import app
from common.system import checks
from common.system import processes
from common.tools import speed_report
from common.units import samplers

SIMULATORS_PER_CORE = (2, 4, 8, 16)   # Figure 1b's axis: 2 is the alternating scheme's minimum
CORES = (1, 2)
SAMPLERS = ('alternating', 'synchronized')
BARRIER_EVERY = 5                     # Appendix A.2: "a barrier ... every five steps"
PAIRED_SAMPLERS = 2                   # Table 3's GPU processes, one per core here
# Table 3 (DGX-1, Breakout, trained A3C-Net) by simulators per core: the total simulator count,
# then thousands of samples per second synchronized and asynchronous.
PAPER_TABLE_3 = {2: (64, 29.6, 31.9), 4: (128, 33.0, 34.7), 8: (256, 35.7, 36.7),
                 16: (512, 35.8, 38.4)}
# What the text prints of Figure 1b (P100, Breakout); the rest is only drawn.
PAPER_FIGURE_1B = {8: '16 cores at ~80% of inference-free'}


def _settings(game, workers, simulators, seconds, warmup_seconds):
    return dict(game=game, num_workers=workers, num_envs=simulators, seconds=seconds,
                warmup_seconds=warmup_seconds)


def measure_figure_cell(kind, cores, simulators_per_core, game, seconds, warmup_seconds):
    """Steps per second per core of one Figure 1b cell, this process and its workers confined to
    `cores` CPUs: kind is a sampler (A3C-Net inference on every step; the alternating one with a
    worker of each group per core) or 'env-only' (one worker per core, random actions)."""
    workers = cores * (2 if kind == 'alternating' else 1)
    settings = _settings(game, workers, cores * simulators_per_core, seconds, warmup_seconds)
    with processes.confined_to_cpus(cores) as warning:
        if warning:
            raise RuntimeError(warning)
        if kind == 'env-only':
            result = bench.env_row('process', variant='stooke')(settings)
        else:
            result = bench_rows.sampling_rate(settings, kind)
    return result['steps_per_sec'] / cores


def measure_figure(game, seconds, warmup_seconds, trials, stream):
    """{(kind, cores, simulators per core): Cell of steps/s per core}."""
    cells = {(kind, cores, count): speed_report.Cell(f'{kind} cores={cores} m={count}')
             for kind in SAMPLERS + ('env-only',) for cores in CORES
             for count in SIMULATORS_PER_CORE}
    return speed_report.measure_round_robin(
        cells, lambda key: measure_figure_cell(*key, game, seconds, warmup_seconds), trials,
        stream, 'steps/s per core')


def measure_paired(simulators_per_core, synchronized, game, seconds, warmup_seconds):
    """Steps per second of PAIRED_SAMPLERS samplers, each on one worker of simulators_per_core
    simulators and stepping BARRIER_EVERY steps per collect, in threads of their own; with a
    barrier between all of them after every collect if synchronized."""
    config = bench_rows.configure_row(
        _settings(game, 1, simulators_per_core, seconds, warmup_seconds), 'a2c_pong',
        'synchronized', [f'AccelConfig.horizon = {BARRIER_EVERY}'])
    learner = kinds.build_learner(config)
    barrier = threading.Barrier(PAIRED_SAMPLERS) if synchronized else None
    stop, errors, counts = threading.Event(), [], [0] * PAIRED_SAMPLERS
    with contextlib.ExitStack() as stack:
        pools = [stack.enter_context(learners.open_pool(config, seed=index))
                 for index in range(PAIRED_SAMPLERS)]
        paired = [samplers.make_sampler('synchronized', pool, config.horizon) for pool in pools]

        def policy(observations):
            return learner.act(observations).numpy()

        paired[0].collect(policy)  # traces the policy before the threads share it

        def run(index):
            try:
                while not stop.is_set():
                    paired[index].collect(policy)
                    counts[index] += config.num_envs * config.horizon
                    if barrier is not None:
                        barrier.wait()
            except threading.BrokenBarrierError:
                pass
            except Exception as error:  # pylint: disable=broad-except  (re-raised below)
                errors.append(error)
                stop.set()
                if barrier is not None:
                    barrier.abort()

        threads = [threading.Thread(target=run, args=(index,), daemon=True)
                   for index in range(PAIRED_SAMPLERS)]
        for thread in threads:
            thread.start()
        try:
            stop.wait(warmup_seconds)
            first, start = sum(counts), time.perf_counter()
            stop.wait(seconds)
            steps, elapsed = sum(counts) - first, time.perf_counter() - start
        finally:
            stop.set()
            if barrier is not None:
                barrier.abort()
            for thread in threads:
                thread.join()
    if errors:
        raise errors[0]
    return steps / elapsed


def measure_table(game, seconds, warmup_seconds, trials, stream):
    """{(simulators per core, synchronized): Cell of steps/s}."""
    cells = {(count, synchronized): speed_report.Cell(
        f"{'sync' if synchronized else 'async'} m={count}")
        for count in SIMULATORS_PER_CORE for synchronized in (True, False)}
    return speed_report.measure_round_robin(
        cells, lambda key: measure_paired(*key, game, seconds, warmup_seconds), trials, stream)


def _value(cell, scale=1.0):
    if not cell.measured:
        return f'failed: {cell.error}'
    return f'{cell.mean / scale:,.0f} +- {cell.std / scale:,.0f}'


def figure_experiment(cells, game, seconds, trials, figure):
    """Figure 1b as a table (per-core rates, ratio to inference-free) and as lines."""
    rows = []
    for kind in SAMPLERS:
        for cores in CORES:
            for count in SIMULATORS_PER_CORE:
                cell, free = cells[(kind, cores, count)], cells[('env-only', cores, count)]
                ratio = f'{cell.mean / free.mean:.2f}' if cell.measured and free.measured else ''
                rows.append([kind, cores, count, _value(cell), _value(free), ratio,
                             PAPER_FIGURE_1B.get(count, 'drawn only')])
    series = [(f'{kind}, {cores} core{"s" if cores > 1 else ""}',
               [cells[(kind, cores, count)].mean for count in SIMULATORS_PER_CORE])
              for kind in SAMPLERS for cores in CORES]
    references = []
    for cores in CORES:  # the best inference-free rate per core, as the paper's flat lines
        rates = [cells[('env-only', cores, count)].mean for count in SIMULATORS_PER_CORE
                 if cells[('env-only', cores, count)].measured]
        if rates:
            references.append((f'no inference, {cores} core{"s" if cores > 1 else ""}',
                               max(rates)))
    speed_report.lines(figure, SIMULATORS_PER_CORE, series, 'simulators per core',
                       'steps per second per core', f'Figure 1b: sampling speed ({game})',
                       references)
    return speed_report.Experiment(
        'Figure 1b: sampling speed against simulators per core',
        f'the A3C-Net untrained on {game} (the paper: trained, on Breakout); inference on the '
        'same 2 CPU cores as the simulators (the paper: a P100 GPU, up to 16 cores at 2.2 GHz); '
        f'{seconds:g} s per trial, {trials} trials per cell.',
        speed_report.markdown_table(
            ['sampler', 'cores', 'simulators per core', 'steps/s per core',
             'no inference, steps/s per core', 'with / without inference',
             'paper (section 5)'], rows),
        os.path.basename(figure),
        'The paper draws the alternating scheme; the synchronized sampler is the presets\' '
        'default here. "No inference" is the same worker processes stepping with random '
        'actions (the paper\'s dashed and dotted lines: one process, and one per hyperthread).')


def table_experiment(cells, seconds, trials):
    """Table 3: synchronized against asynchronous sampling, ours beside the paper's."""
    rows = []
    for count in SIMULATORS_PER_CORE:
        sync, free = cells[(count, True)], cells[(count, False)]
        ratio = f'{sync.mean / free.mean:.2f}' if sync.measured and free.measured else ''
        paper_total, paper_sync, paper_async = PAPER_TABLE_3[count]
        rows.append([f'{PAIRED_SAMPLERS * count} ({count})', _value(sync), _value(free), ratio,
                     f'{paper_total} ({count})', paper_sync, paper_async,
                     f'{paper_sync / paper_async:.2f}'])
    return speed_report.Experiment(
        'Table 3: sampling speed with and without a barrier every five steps',
        f'{PAIRED_SAMPLERS} samplers in threads of one process, each with one worker process '
        'and its own inference calls on the CPU (the paper: one process per GPU of a DGX-1, '
        f'8 GPUs, each with its cores\' simulators); untrained A3C-Net; {seconds:g} s per trial, {trials} trials '
        'per cell.',
        speed_report.markdown_table(
            ['simulators (per core)', 'sync, steps/s', 'async, steps/s', 'sync / async',
             'paper: simulators (per core)', 'paper sync, k/s', 'paper async, k/s',
             'paper sync / async'], rows),
        notes='The barrier costs the wait for the slower sampler at every fifth step; more '
              'simulators per core average out the stragglers (the paper\'s reading of Table 3).')


def main():
    flags_ = flags.FLAGS
    checks.require(flags_.seconds > 0, f'--seconds={flags_.seconds}; must be > 0')
    checks.require(flags_.warmup_seconds >= 0,
                   f'--warmup_seconds={flags_.warmup_seconds}; must be >= 0')
    checks.require(flags_.trials >= 2, f'--trials={flags_.trials}; must be >= 2 (a spread)')
    start = time.perf_counter()
    figure_cells = measure_figure(flags_.game, flags_.seconds, flags_.warmup_seconds,
                                  flags_.trials, sys.stdout)
    table_cells = measure_table(flags_.game, flags_.seconds, flags_.warmup_seconds,
                                flags_.trials, sys.stdout)
    out = flags_.out
    directory = os.path.dirname(os.path.abspath(out))
    os.makedirs(directory, exist_ok=True)
    experiments = [
        figure_experiment(figure_cells, flags_.game, flags_.seconds, flags_.trials,
                          os.path.join(directory, 'accelerated_methods_figure1b.png')),
        table_experiment(table_cells, flags_.seconds, flags_.trials)]
    speed_report.write_command_report(out, 'Accelerated Methods (Stooke & Abbeel 2018)',
                                      'accel_tf.reproduce', experiments, start)


if __name__ == '__main__':
    flags.DEFINE_float('seconds', 5.0, 'Timed seconds per trial of a cell.')
    flags.DEFINE_float('warmup_seconds', 2.0, 'Untimed seconds per trial first.')
    flags.DEFINE_integer('trials', 3, 'Trials per cell.')
    flags.DEFINE_string('game', 'breakout', 'Atari game (Figure 1b and Table 3: Breakout).')
    flags.DEFINE_string('out', os.path.join(app.PROJECT_ROOT,
                                            'docs/reproductions/accelerated_methods.md'),
                        'The report; its figure goes beside it.')
    app.execute(main)
