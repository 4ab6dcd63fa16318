"""`python -m paac_tf.reproduce`: PAAC's Figure 2 (Clemente et al. 2017, section 5.2: time usage
in Pong for ne in {16, 32, 64, 128, 256}, archnips and archnature) at this machine's scale,
written to docs/reproductions/paac.md with a figure.

Each cell is gin/paac/pong.gin (nw = 8 worker processes) with its ne and network, iterated
--seconds after --warmup_iterations untimed ones, --trials times round-robin over the cells: its
training steps per second and where the time went (env: the workers stepping, act: action
selection, learn: the update), the shares of OnPolicyUnit's time parts. A cell that fails is
reported in its row; the rest go on.
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import os
import sys
import time

from absl import flags

from common.envs import pools
from common.launch import app
from common.system import checks
from common.tools import speed_report
from common.units import on_policy
from common.units import samplers
from paac_tf import main as paac_main
from paac_tf import paac

NETWORKS = ('nips', 'nature')
NUM_ENVS = (16, 32, 64, 128, 256)
PARTS = ('env', 'act', 'learn')
# What section 5.2 prints of Figure 2 (the rest is only drawn): archnips at ne = 32 spends about
# 50% of the time in the environments and 37% learning and selecting actions; archnature runs
# 22% fewer timesteps per second than archnips at ne = 32 on the GPU, 41% fewer on the CPU.
PAPER_SHARES = {('nips', 32): 'env ~50%, learn + act 37%'}
PAPER_NATURE_DROP = 'GPU -22%, CPU -41% (ne = 32)'


def measure_cell(network, num_envs, seconds, warmup_iterations, game):
    """(steps per second, {part: share of the timed seconds}) of one cell."""
    config = paac_main.configure([os.path.join(app.PROJECT_ROOT, 'gin/paac/pong.gin')], [
        f"AtariConfig.game = '{game}'", f'PAACConfig.num_envs = {num_envs}',
        f"PAACConfig.network = '{network}'"])
    learner = paac.build_learner(config)
    with pools.make_pool(config.env_config, config.num_envs, seed=0,
                         num_workers=config.num_workers,
                         num_groups=samplers.num_groups(config.sampler)) as pool:
        unit = on_policy.OnPolicyUnit(samplers.make_sampler(config.sampler, pool, config.horizon),
                                      learner)
        for _ in range(warmup_iterations):
            unit.iterate()
        unit.take_part_seconds()
        start, steps = time.perf_counter(), 0
        while time.perf_counter() - start < seconds:
            unit.iterate()
            steps += unit.steps_per_update
        elapsed = time.perf_counter() - start
        parts = unit.take_part_seconds()
    return steps / elapsed, {name: parts.get(name, 0.0) / elapsed for name in PARTS}


def measure(seconds, trials, warmup_iterations, game, stream):
    """{(network, ne): Cell of steps/s} and {(network, ne, part): Cell of its share}."""
    rates = {(network, count): speed_report.Cell(f'arch{network} ne={count}')
             for network in NETWORKS for count in NUM_ENVS}
    shares = {key + (part,): speed_report.Cell(f'{key} {part}') for key in rates
              for part in PARTS}

    def trial(key):
        rate, cell_shares = measure_cell(*key, seconds, warmup_iterations, game)
        for part, share in cell_shares.items():
            shares[key + (part,)].values.append(share)
        print(f'{rates[key].label}: {rate:,.0f} steps/s, ' + ', '.join(
            f'{part} {share:.0%}' for part, share in cell_shares.items()), file=stream,
            flush=True)
        return rate

    for _ in range(trials):
        for key, cell in rates.items():
            speed_report.measure(cell, lambda: trial(key), stream)
    return rates, shares


def figure_experiment(rates, shares, seconds, trials, figure):
    """Figure 2 as a table (ours beside what the paper prints) and stacked shares."""
    rows = []
    for network, count in rates:
        cell = rates[(network, count)]
        paper = PAPER_SHARES.get((network, count), 'drawn only')
        if network == 'nature' and count == 32:
            paper = PAPER_NATURE_DROP
        if not cell.measured:
            rows.append([f'arch{network}', count, f'failed: {cell.error}', '', '', '', '', paper])
            continue
        nips = rates[('nips', count)]
        drop = (f'{100 * (cell.mean / nips.mean - 1):+.0f}%'
                if network == 'nature' and nips.measured else '')
        rows.append([f'arch{network}', count, f'{cell.mean:,.0f} +- {cell.std:,.0f}'] +
                    [f'{100 * shares[(network, count, part)].mean:.0f}%' for part in PARTS] +
                    [drop, paper])
    table = speed_report.markdown_table(
        ['network', 'ne', 'steps/s (ours)', 'env', 'act', 'learn', 'archnature vs archnips',
         'paper (section 5.2)'], rows)
    labels = [f'{network} ne={count}' for network, count in rates]
    speed_report.stacked_bars(figure, labels, [
        (part, [shares[key + (part,)].mean for key in rates]) for part in PARTS],
        'share of the timed seconds', 'PAAC, Figure 2: where the time goes (Pong)')
    return speed_report.Experiment(
        'Figure 2: time usage for different ne, archnips and archnature',
        f'{seconds:g} s per trial and {trials} trials per cell (the paper: whole runs); 2 CPU '
        'cores run the 8 workers, the action selection and the learner (the paper: a GPU for '
        'the network, a GTX 980 Ti, and a 4-core i7-4790K), so env and learn share the cores.',
        table, os.path.basename(figure),
        'Shares are of the timed seconds; the parts do not overlap with the synchronized '
        "sampler (the preset's), so they sum to about 100%.")


def main():
    flags_ = flags.FLAGS
    checks.require(flags_.seconds > 0, f'--seconds={flags_.seconds}; must be > 0')
    checks.require(flags_.trials >= 2, f'--trials={flags_.trials}; must be >= 2 (a spread)')
    checks.require(flags_.warmup_iterations >= 0,
                   f'--warmup_iterations={flags_.warmup_iterations}; must be >= 0')
    start = time.perf_counter()
    rates, shares = measure(flags_.seconds, flags_.trials, flags_.warmup_iterations,
                            flags_.game, sys.stdout)
    out = flags_.out
    directory = os.path.dirname(os.path.abspath(out))
    os.makedirs(directory, exist_ok=True)
    experiment = figure_experiment(rates, shares, flags_.seconds, flags_.trials,
                                   os.path.join(directory, 'paac_figure2.png'))
    speed_report.write_command_report(out, 'PAAC (Clemente et al. 2017)', 'paac_tf.reproduce',
                                      [experiment], start)


if __name__ == '__main__':
    flags.DEFINE_float('seconds', 10.0, 'Timed seconds per trial of a cell.')
    flags.DEFINE_integer('trials', 3, 'Trials per cell.')
    flags.DEFINE_integer('warmup_iterations', 5, 'Untimed iterations first (tracing, workers).')
    flags.DEFINE_string('game', 'pong', 'Atari game (Figure 2: Pong).')
    flags.DEFINE_string('out', os.path.join(app.PROJECT_ROOT, 'docs/reproductions/paac.md'),
                        'The report; its figure goes beside it.')
    app.execute(main)
