"""`python -m ga3c_tf.reproduce`: GA3C's speed experiments (Babaeizadeh et al. 2017) at this
machine's scale, written to docs/reproductions/ga3c.md with figures.

- Figures 2 and 4 and the section 5.1 profile: the annealer (section 4.3) from NP = NT = NA = 1
  on Pong, its settings and TPS each interval; the queue and prediction-batch sizes and the
  profile columns over its last interval.
- Figure 7's systems side: training_min_batch_size in {1, 5, 10, 20, 40} at fixed settings, TPS,
  PPS and policy lag (the paper's Figure 7 is learning curves; a short run gives the speed side).
- Table 2: PPS of GA3C and of the CPU A3C baseline, the small network and the large one at first
  strides 4, 3, 2 and 1 (ga3c_tf.bench_rows' measurements).
A cell that fails is reported in its row; the rest go on.
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import os
import sys
import time

from absl import flags

from common.launch import app
from common.system import checks
from common.system import machine_load
from common.tools import speed_report
from common.tools import timing
from ga3c_tf import bench_rows
from ga3c_tf import learner as learner_lib
from ga3c_tf import loop
from ga3c_tf import server as server_lib

MIN_BATCH_SIZES = (1, 5, 10, 20, 40)
NETWORKS = {'small': [], 'large, stride 4': bench_rows.LARGE}
NETWORKS.update({f'large, stride {stride}': [
    "GA3CConfig.network = 'ga3c_large'", f"GA3CConfig.torso_kwargs = {{'first_stride': {stride}}}"]
    for stride in (3, 2, 1)})
# Table 2, System I (PPS of A3C on the CPU, of GA3C; the speedup as printed).
PAPER_TABLE_2 = {'small': (352, 1361, '4x'), 'large, stride 4': (113, 1271, '11x'),
                 'large, stride 3': (97, 1206, '12x'), 'large, stride 2': (43, 874, '20x'),
                 'large, stride 1': (11, 490, '45x')}
# Section 5.1, "Significant latency" (System I).
PAPER_PROFILE = {'prediction_wait_ms': '108', 'prediction_call_share': '0.10 (GPU inference)',
                 'update_ms': '11.1', 'update_assembly_share': '0.59 (all overhead)'}
PROFILE = tuple(PAPER_PROFILE)
WALK_NOTES = {'every_knob': "the original code's walk (every knob -1/0/+1 at once, judged against "
                            'the previous interval; ThreadDynamicAdjustment.py), whose runs made '
                            "the paper's Figure 2",
              'one_knob': "the paper's words (one knob +-1, judged against the accepted "
                          "settings' TPS)"}


def _server(bindings, game):
    config = bench_rows._config({'game': game, 'num_envs': 1, 'num_workers': 1}, 'ga3c',
                                bindings)  # pylint: disable=protected-access
    return config, server_lib.GA3CServer(config, learner_lib.build_learner(config))


def _wait_for_updates(server, updates=2, seconds=300):
    """Blocks until the server has trained `updates` times (agents started, traced)."""
    deadline = time.monotonic() + seconds
    while server.counts()['updates'] < updates:
        if time.monotonic() > deadline:
            raise RuntimeError(f'GA3C did not train within {seconds} s')
        server.check_agents()
        time.sleep(0.1)


def anneal(seconds, interval, game, stream, walk='every_knob'):
    """[(elapsed s, NP, NT, NA, TPS)] per interval of the annealer (GA3CConfig.dynamic_walk
    `walk`) from (1, 1, 1), and the last interval's meter row (queue sizes, batch sizes,
    profile)."""
    config, server = _server(['GA3CConfig.num_agents = 1', 'GA3CConfig.num_predictors = 1',
                              'GA3CConfig.num_trainers = 1', 'GA3CConfig.max_agents = 64',
                              f"GA3CConfig.dynamic_walk = '{walk}'"], game)
    annealer = loop.make_annealer(config)
    trajectory, row = [], {}
    with server:
        settings = (1, 1, 1)
        server.apply(settings)
        _wait_for_updates(server)  # the annealer judges TPS once training runs (as the
        # original code's DYNAMIC_SETTINGS_INITIAL_WAIT does)
        meter = loop._IntervalMeter(server)  # pylint: disable=protected-access
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            updates, began = server.counts()['updates'], time.monotonic()
            while time.monotonic() - began < interval:
                time.sleep(0.1)
                server.check_agents()
                server.check_threads()
                meter.sample_queues()
            elapsed = time.monotonic() - began
            tps = (server.counts()['updates'] - updates) / elapsed
            row = meter.row(elapsed, 1)
            trajectory.append((time.monotonic() - start,) + settings + (tps,))
            print(f'anneal {trajectory[-1][0]:.0f} s: NP={settings[0]} NT={settings[1]} '
                  f'NA={settings[2]} TPS {tps:.1f}', file=stream, flush=True)
            settings = annealer.step(tps)
            server.apply(settings)
    return trajectory, row


def min_batch_cell(size, seconds, game, num_agents=16):
    """(TPS, PPS, mean policy lag) of NP = NT = 2 and num_agents agents with
    training_min_batch_size size."""
    _, server = _server([f'GA3CConfig.training_min_batch_size = {size}',
                         f'GA3CConfig.num_agents = {num_agents}',
                         f'GA3CConfig.max_agents = {num_agents}'], game)
    with server:
        server.apply((2, 2, num_agents))
        _wait_for_updates(server)
        server.take_lags()
        before, began = server.counts(), time.monotonic()
        while time.monotonic() - began < seconds:
            server.check_agents()
            time.sleep(0.1)
        after, elapsed = server.counts(), time.monotonic() - began
        mean_lag, _ = server.take_lags()
    return ((after['updates'] - before['updates']) / elapsed,
            (after['predictions'] - before['predictions']) / elapsed, mean_lag)


def anneal_experiment(trajectory, row, figure, walk='every_knob', interval=20.0):
    labels = [f'{point[0]:.0f} s' for point in trajectory]
    speed_report.grouped_bars(figure, labels, [
        ('NP', [float(point[1]) for point in trajectory]),
        ('NT', [float(point[2]) for point in trajectory]),
        ('NA', [float(point[3]) for point in trajectory]),
        ('TPS', [point[4] for point in trajectory])], 'settings and TPS',
        'GA3C annealer from NP = NT = NA = 1 (Pong)')
    table = speed_report.markdown_table(
        ['elapsed', 'NP', 'NT', 'NA', 'TPS'],
        [[f'{point[0]:.0f} s', *point[1:4], f'{point[4]:.1f}'] for point in trajectory])
    final = speed_report.markdown_table(['last interval', 'ours', 'paper'], [
        ['training queue size', f"{row.get('training_queue_size', float('nan')):.1f}",
         'well below capacity (Figure 4)'],
        ['prediction batch size', f"{row.get('mean_prediction_batch', float('nan')):.1f}",
         'larger for the fastest (Figure 4)']] + [
        [name, _cell(row.get(name)), PAPER_PROFILE[name]] for name in PROFILE])
    return speed_report.Experiment(
        'Figures 2 and 4, section 5.1: the annealer from 1/1/1, queues and the profile',
        f'intervals of {interval:.0f} s (the original code\'s step wait is 20 s; the paper says a '
        f'minute) and '
        f'{WALK_NOTES[walk]}; a run of minutes (the paper: hours on System I, a GPU); NA is '
        'capped at 64 here. The profile\'s call times include '
        "TensorFlow's dispatch, which the paper counts as overhead.", table + '\n\n' + final,
        os.path.basename(figure))


def _cell(value):
    return '-' if value is None else f'{value:.3g}'


def min_batch_experiment(cells, seconds, figure):
    rows, tps = [], []
    for size, (rate, pps, lag) in cells.items():
        if not rate.measured:
            rows.append([size, f'failed: {rate.error}', '', ''])
            tps.append(float('nan'))
            continue
        rows.append([size, f'{rate.mean:.1f} +- {rate.std:.1f}', f'{pps.mean:,.0f}',
                     f'{lag.mean:.2f}' if lag.values else '-'])
        tps.append(rate.mean)
    speed_report.grouped_bars(figure, [str(size) for size in cells], [('TPS', tps)], 'TPS',
                              'GA3C, training_min_batch_size')
    return speed_report.Experiment(
        'Figure 7, systems side: minimum training batch size against TPS and policy lag',
        f'{seconds:g} s per trial at NP = NT = 2, NA = 16; the paper\'s Figure 7 shows learning '
        'curves (best between 20 and 40), which a speed run does not; it prints no TPS.',
        speed_report.markdown_table(['min batch', 'TPS', 'PPS', 'mean policy lag (updates)'],
                                    rows), os.path.basename(figure))


def table_2_experiment(cells, figure):
    rows, ours, theirs = [], [], []
    for name, (paper_a3c, paper_ga3c, paper_speedup) in PAPER_TABLE_2.items():
        a3c, ga3c = cells[(name, 'a3c_cpu')], cells[(name, 'ga3c')]
        failed = [cell for cell in (a3c, ga3c) if not cell.measured]
        speedup = float('nan') if failed else ga3c.mean / a3c.mean
        rows.append([name, f'failed: {a3c.error}' if a3c in failed else f'{a3c.mean:,.0f}',
                     f'failed: {ga3c.error}' if ga3c in failed else f'{ga3c.mean:,.0f}',
                     '-' if failed else f'{speedup:.2f}x', paper_a3c, paper_ga3c, paper_speedup])
        ours.append(speedup)
        theirs.append(paper_ga3c / paper_a3c)
    speed_report.grouped_bars(figure, list(PAPER_TABLE_2), [('ours', ours),
                                                            ('paper, System I', theirs)],
                              'GA3C PPS / A3C-CPU PPS', 'GA3C, Table 2')
    return speed_report.Experiment(
        'Table 2: PPS of GA3C and the CPU A3C, small and large networks',
        'GA3C\'s network on the same 2 CPU cores as its agents (the paper: a GPU, System I a '
        'Titan X and a 16-core Xeon); 32 GA3C agents, one A3C agent per core.',
        speed_report.markdown_table(['network', 'A3C PPS (ours)', 'GA3C PPS (ours)', 'speedup',
                                     'A3C (paper)', 'GA3C (paper)', 'speedup (paper)'], rows),
        os.path.basename(figure))


def main():
    flags_ = flags.FLAGS
    for name in ('seconds', 'anneal_seconds', 'anneal_interval'):
        checks.require(getattr(flags_, name) > 0, f'--{name}={getattr(flags_, name)}; must be > 0')
    warmup = timing.warmup_seconds(flags_.warmup_seconds)
    checks.require(warmup >= 0, f'--warmup_seconds={warmup}; must be >= 0')
    checks.require(flags_.trials >= 2, f'--trials={flags_.trials}; must be >= 2 (a spread)')
    start, stream = time.perf_counter(), sys.stdout
    directory = os.path.dirname(os.path.abspath(flags_.out))
    os.makedirs(directory, exist_ok=True)
    checks.require(flags_.anneal_walk in WALK_NOTES, f'--anneal_walk={flags_.anneal_walk}; '
                   f'allowed: {", ".join(WALK_NOTES)}')
    trajectory, row = anneal(flags_.anneal_seconds, flags_.anneal_interval, flags_.game, stream,
                             flags_.anneal_walk)
    batches = {size: tuple(speed_report.Cell(f'min batch {size} {what}')
                           for what in ('TPS', 'PPS', 'lag')) for size in MIN_BATCH_SIZES}
    pps = {(name, algorithm): speed_report.Cell(f'{name} {algorithm}')
           for name in PAPER_TABLE_2 for algorithm in ('a3c_cpu', 'ga3c')}
    settings = {'game': flags_.game, 'num_envs': 32, 'num_workers': machine_load.usable_cores(),
                'seconds': flags_.seconds, 'warmup_seconds': warmup}
    for _ in range(flags_.trials):
        for size, (rate, rates, lags) in batches.items():
            def trial(size=size, rates=rates, lags=lags):
                tps, predictions, lag = min_batch_cell(size, flags_.seconds, flags_.game)
                rates.values.append(predictions)
                if lag is not None:
                    lags.values.append(lag)
                return tps
            speed_report.measure(rate, trial, stream)
        for (name, algorithm), cell in pps.items():
            measure_pps = bench_rows.ga3c_pps if algorithm == 'ga3c' else bench_rows.a3c_cpu_pps
            speed_report.measure(cell, lambda: measure_pps(
                settings, NETWORKS[name])['median'], stream)
    experiments = [
        anneal_experiment(trajectory, row, os.path.join(directory, 'ga3c_anneal.png'),
                          flags_.anneal_walk, flags_.anneal_interval),
        min_batch_experiment(batches, flags_.seconds,
                             os.path.join(directory, 'ga3c_min_batch.png')),
        table_2_experiment(pps, os.path.join(directory, 'ga3c_table2.png'))]
    speed_report.write_command_report(flags_.out, 'GA3C (Babaeizadeh et al. 2017)',
                                      'ga3c_tf.reproduce', experiments, start)


if __name__ == '__main__':
    flags.DEFINE_float('seconds', 15.0, 'Timed seconds per trial of a Figure 7 or Table 2 cell.')
    flags.DEFINE_integer('trials', 3, 'Trials per cell.')
    flags.DEFINE_float('warmup_seconds', None, 'Unmeasured seconds before each Table 2 cell; '
                       'default as common.bench: 2, 10 where a GPU may compute.')
    flags.DEFINE_float('anneal_seconds', 600.0, 'How long the annealer runs (Figure 2).')
    flags.DEFINE_string('anneal_walk', 'every_knob', 'GA3CConfig.dynamic_walk of the annealer: '
                        "every_knob (the original code's, which made Figure 2) or one_knob.")
    flags.DEFINE_float('anneal_interval', 20.0, 'Seconds per annealer step (the paper: 60; '
                       "the original code's default: 20).")
    flags.DEFINE_string('game', 'pong', 'Atari game (Figures 2-4: Pong).')
    flags.DEFINE_string('out', os.path.join(app.PROJECT_ROOT, 'docs/reproductions/ga3c.md'),
                        'The report; its figures go beside it.')
    app.execute(main)
