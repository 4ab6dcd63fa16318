"""`python -m dqn_tf.speedtest [--steps N] [--json PATH]`: the paper's section 5.1 ablation.

Every mode (standard, concurrent, synchronized, both) with every actor-thread count trains the
same number of steps on Pong at a fixed epsilon of 0.1 (section 5.1), one configuration after
another in this one invocation, after an untimed prepopulation and tracing warm-up. The table
gives each runtime, its speedup over standard DQN with 1 thread (the paper's Table 3) and its
ratio to the learner-only bound (per round, then the median): the time the steps/F minibatches
take alone (replay draws prefetched as the trainer thread does), which no mode can beat on a
machine where the update dominates. With --actor_envs=thread,process,vector each row runs with
the actors' environments in their threads, in worker processes and in ale_py's vector env
(DQNConfig.actor_envs). With
--actors_only the table is the actors' rounds alone: random actions, no inference and no
training, each W and place of the environments (the env-only rate the W threads reach).
Timings are only comparable within one invocation.
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import concurrent.futures
import json
import os
import sys
import time

from absl import flags
import numpy as np

from common.launch import app
from common.system import checks
from common.system import devices
from common.system import machine_load
from dqn_tf import config as config_lib
from dqn_tf import dqn
from dqn_tf import main as dqn_main
from dqn_tf import trainer as trainer_lib

# The paper runs Synchronized Execution with 2 or more threads only (Table 1).
DEFAULT_ACTORS = {'standard': (1, 2, 4, 8), 'concurrent': (1, 2, 4, 8),
                   'synchronized': (2, 4, 8), 'both': (2, 4, 8)}
SPEEDTEST_EPSILON = 0.1  # "we fix epsilon_t = 0.1 for the entirety of this shorter training"


def speedtest_config(mode, num_actors, game='pong', target_period=10_000, prepopulate_steps=1000,
                     replay_capacity=100_000, seed=0, jit_compile=False, actor_envs='thread',
                     compute_dtype='float32'):
    """The paper's Pong config in one mode, with epsilon fixed at 0.1 and evaluation off;
    jit_compile: the networks' calls XLA-compiled; actor_envs: DQNConfig.actor_envs;
    compute_dtype: DQNConfig.compute_dtype."""
    concurrent, synchronized = config_lib.MODE_SWITCHES[mode]
    bindings = [f"AtariConfig.game = '{game}'",
                f'DQNConfig.num_actors = {num_actors}',
                f'DQNConfig.concurrent = {concurrent}',
                f'DQNConfig.synchronized = {synchronized}',
                f'DQNConfig.target_period = {target_period}',
                f'DQNConfig.prepopulate_steps = {prepopulate_steps}',
                f'DQNConfig.replay_capacity = {max(replay_capacity, target_period)}',
                f'DQNConfig.initial_epsilon = {SPEEDTEST_EPSILON}',
                f'DQNConfig.final_epsilon = {SPEEDTEST_EPSILON}',
                'DQNConfig.eval_every_steps = 0',
                f'DQNConfig.seed = {seed}', f'DQNConfig.jit_compile = {jit_compile}',
                f"DQNConfig.actor_envs = '{actor_envs}'",
                f"DQNConfig.compute_dtype = '{compute_dtype}'"]
    return dqn_main.configure([os.path.join(app.PROJECT_ROOT, 'gin/dqn/pong.gin')], bindings)


class Session:
    """One configuration built, prepopulated and traced; run(steps) times training steps."""

    def __init__(self, config, warm_up=True):
        self.config = config
        self.learner = dqn.build_learner(config)
        self.fast_dqn = dqn.FastDQN(config, self.learner, seed=config.seed)
        try:
            self.fast_dqn.prepopulate(config.prepopulate_steps)
            if warm_up:
                self._warm_up()
        except BaseException:
            self.fast_dqn.close()
            raise
        self.step = 0

    def _warm_up(self, minibatches=30):
        """Traces the hot path's tf.functions and runs the first (slow, allocating) minibatches
        outside the timed region."""
        fast_dqn = self.fast_dqn
        for _ in range(minibatches):
            fast_dqn.train_minibatch()
        fast_dqn.train_on_stack(fast_dqn.replay.sample_stacked(
            self.config.minibatches_per_call, self.config.batch_size))
        fast_dqn.act_fn(fast_dqn.observations).numpy()
        fast_dqn.act_fn(fast_dqn.observations[:1]).numpy()

    def run(self, num_steps):
        """Trains num_steps steps in target periods; returns the wall seconds they took."""
        config = self.config
        start = time.perf_counter()
        end_step = self.step + num_steps
        while self.step < end_step:
            period = min(config.target_period, end_step - self.step)
            self.step = self.fast_dqn.run_period(self.step, period)
            self.fast_dqn.drain_episodes()
        return time.perf_counter() - start

    def actors_only(self, num_steps):
        """Seconds that num_steps uniformly random steps take in rounds of the W actors (their
        replay writes included): no inference and no training."""
        start = time.perf_counter()
        self.fast_dqn.prepopulate(num_steps)
        return time.perf_counter() - start

    def learner_only(self, num_steps):
        """Seconds that num_steps/F minibatches take on their own, through the trainer thread's
        own path (the next minibatch drawn from replay while the current one trains)."""
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as prefetcher:
            start = time.perf_counter()
            trainer_lib.train_prefetched(self.fast_dqn, num_steps // self.config.train_period,
                                         prefetcher)
            return time.perf_counter() - start

    def close(self):
        self.fast_dqn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def run_speedtest(steps, modes, actors_by_mode, game='pong', target_period=10_000,
                  prepopulate_steps=1000, stream=sys.stdout, repeats=1, actor_envs=('thread',),
                  actors_only=False):
    """Measures every (mode, actors, actor_envs) and the learner-only bound (or, with
    actors_only, the actors' rounds alone); returns the table's rows.

    With repeats > 1 the whole sequence runs that many rounds, one after another, and each row
    gets the median of its rounds: the machine's drift over minutes then touches every row alike.
    """
    keys = [(mode, num_actors, where) for mode in modes
            for num_actors in actors_by_mode[mode] for where in actor_envs]
    learner_key = ('learner-only', 0, '-')
    seconds = {key: [] for key in keys + ([] if actors_only else [learner_key])}
    for round_index in range(repeats):
        prefix = f'round {round_index + 1}/{repeats} ' if repeats > 1 else ''
        for key in keys:
            mode, num_actors, where = key
            config = speedtest_config(mode, num_actors, game, target_period, prepopulate_steps,
                                      actor_envs=where)
            with Session(config, warm_up=not actors_only) as session:
                if key == keys[0] and not actors_only:
                    learner = session.learner_only(steps)
                    seconds[learner_key].append(learner)
                    print(f'{prefix}learner-only: {learner:.2f} s', file=stream, flush=True)
                elapsed = session.actors_only(steps) if actors_only else session.run(steps)
            seconds[key].append(elapsed)
            print(f'{prefix}{mode:<13} W={num_actors} envs in {where}: {elapsed:.2f} s',
                  file=stream, flush=True)
    rows = [{'mode': 'actors-only' if actors_only else mode, 'actors': num_actors,
             'actor_envs': where, 'seconds': float(np.median(values)), 'round_seconds': values}
            for (mode, num_actors, where), values in seconds.items()]
    # The baseline: standard DQN with 1 thread (the paper's Table 3), or the first actors-only row.
    baseline = rows[0]['seconds'] if actors_only else next(
        (row['seconds'] for row in rows if row['mode'] == 'standard' and row['actors'] == 1
         and row['actor_envs'] == actor_envs[0]), None)
    for row in rows:
        row['speedup'] = baseline / row['seconds'] if baseline else None
        if actors_only:
            continue
        # Against the learner-only time of the same round, then the median: the machine's drift
        # between rounds cancels, where a ratio of the two medians would keep it.
        row['vs_learner'] = float(np.median([
            elapsed / learner
            for elapsed, learner in zip(row['round_seconds'], seconds[learner_key])]))
    return rows


def format_table(rows, steps, repeats=1):
    rounds = f', median of {repeats} rounds' if repeats > 1 else ''
    first = rows[0]
    against = ('the first row' if first['mode'] == 'actors-only' else 'standard W=1')
    lines = [f'{steps:,} steps per row, epsilon {SPEEDTEST_EPSILON}{rounds}; speedup vs '
             f'{against}',
             f"{'mode':<14}{'actors':>8}{'envs in':>9}{'seconds':>10}{'steps/s':>10}"
             f"{'speedup':>9}{'/ learner':>11}"]
    for row in rows:
        speedup = f"{row['speedup']:.2f}x" if row['speedup'] else '-'
        vs_learner = f"{row['vs_learner']:.2f}" if 'vs_learner' in row else '-'
        actors = row['actors'] or '-'
        lines.append(f"{row['mode']:<14}{actors:>8}{row['actor_envs']:>9}"
                     f"{row['seconds']:>10.2f}{steps / row['seconds']:>10.1f}{speedup:>9}"
                     f"{vs_learner:>11}")
    return '\n'.join(lines)


def main():
    flags_ = flags.FLAGS
    modes = flags_.modes
    unknown = [mode for mode in modes if mode not in config_lib.MODE_SWITCHES]
    checks.require(not unknown,
                   f'unknown --modes {unknown}; allowed: {list(config_lib.MODE_SWITCHES)}')
    places = [where for where in flags_.actor_envs if where not in config_lib.ACTOR_ENVS]
    checks.require(flags_.actor_envs and not places,
                   f'--actor_envs={",".join(flags_.actor_envs)}; allowed: '
                   f'{",".join(config_lib.ACTOR_ENVS)} (one or more)')
    actors = [int(value) for value in flags_.actors] if flags_.actors else None
    checks.require(actors is None or all(value > 0 for value in actors),
                   f'--actors must be positive, got {flags_.actors}')
    if flags_.actors_only:  # the rounds alone: one mode (Algorithm 1's), every W from 1
        modes = ['both']
        actors_by_mode = {'both': actors or DEFAULT_ACTORS['standard']}
    else:
        actors_by_mode = {mode: actors or DEFAULT_ACTORS[mode] for mode in modes}
    largest = max(max(values) for values in actors_by_mode.values())
    checks.require(flags_.steps > 0 and flags_.steps % 4 == 0 and all(
        flags_.steps % value == 0 for values in actors_by_mode.values() for value in values),
        f'--steps={flags_.steps} must be a positive multiple of F=4 and of every worker count')
    period = min(flags_.target_period, flags_.steps)
    for values in actors_by_mode.values():
        for value in values:
            config = speedtest_config('standard', value, flags_.game, period, flags_.prepopulate)
    devices.set_intra_op_threads(config.intra_op_threads())
    what = 'random steps of the actors alone' if flags_.actors_only else 'steps'
    print(f'speed test: {flags_.steps:,} {what} per configuration, C={period:,}, up to '
          f'{largest} threads, environments in {" and ".join(flags_.actor_envs)}, '
          f'{machine_load.usable_cores()} usable CPUs (of {os.cpu_count()}), learner intra-op '
          f'threads {config.intra_op_threads()}',
          flush=True)
    checks.require(flags_.repeats > 0, f'--repeats={flags_.repeats} must be >= 1')
    rows = run_speedtest(flags_.steps, modes, actors_by_mode, flags_.game, period,
                         flags_.prepopulate, repeats=flags_.repeats,
                         actor_envs=tuple(flags_.actor_envs),
                         actors_only=flags_.actors_only)
    print(format_table(rows, flags_.steps, flags_.repeats))
    if flags_.json:
        with open(flags_.json, 'w') as f:
            json.dump({'rows': rows, 'steps': flags_.steps, 'target_period': period,
                       'repeats': flags_.repeats,
                       'cpu_count': os.cpu_count(), 'usable_cores': machine_load.usable_cores(),
                       'argv': sys.argv[1:]}, f, indent=2)
        print(f'wrote {flags_.json}')


if __name__ == '__main__':
    flags.DEFINE_integer('steps', 10_000, 'Training steps per configuration (paper: 1M).')
    flags.DEFINE_integer('target_period', 10_000, 'C (Table 5); capped at --steps.')
    flags.DEFINE_integer('prepopulate', 1000, 'Untimed random steps before each configuration.')
    flags.DEFINE_list('modes', list(config_lib.MODE_SWITCHES), 'Modes to measure.')
    flags.DEFINE_list('actors', None, 'Actor-thread counts (default: 1,2,4,8; 2,4,8 for '
                                       'synchronized and both, as in Table 1).')
    flags.DEFINE_string('game', 'pong', 'Atari game (section 5.1: Pong).')
    flags.DEFINE_string('json', None, 'Write {"rows": [...]} here.')
    flags.DEFINE_list('actor_envs', ['thread'], 'Where the actors\' environments step '
                      '(DQNConfig.actor_envs): thread, process, vector, or several to compare.')
    flags.DEFINE_bool('actors_only', False, 'Time the actors\' rounds alone (random actions, '
                      'no inference, no training) for W = --actors (default 1,2,4,8).')
    flags.DEFINE_integer('repeats', 1, 'Rounds of the whole sequence; each row reports its '
                                       'median (steadier ratios on a noisy machine).')
    app.execute(main)
