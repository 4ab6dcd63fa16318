"""`python -m common.bench [--seconds S] [--json PATH] [--rows ...]`: throughput side by side.

Every row runs in this one invocation with the same number of environments, one after another
(never two at once: on a small machine they would measure each other), each in a fresh process,
as its entry point would run it: TensorFlow's thread settings and what one row leaves behind
(processes still exiting, memory) cannot change the next row's numbers. Rows:
  env/<pool>        random actions through each pool: the ceiling any algorithm could reach;
                    env/process/stooke: the worker processes on Stooke & Abbeel's 104x80 frames;
                    env/serial/linear: one process on bilinear 84x84 frames (fast DQN's);
                    env/serial/stooke[/skip]: one process on the 104x80 frames as a 2x2 mean
                    (the presets') or every second pixel;
  paac              PAAC's full training rate (act + step + update) on Pong, nips network;
                    paac/ale_vector: its environments in ale_py's vector env;
                    paac/ale_vector/alternating: in two groups, one acting while one steps;
                    paac/network: its act calls and updates alone, no environment;
  dqn/standard      fast DQN, standard mode, 1 actor thread (env steps/s while training);
  dqn/both          fast DQN, concurrent + synchronized, 8 actor threads;
  ga3c, a3c_cpu     GA3C and the CPU A3C baseline (PPS), small network; /large: GA3C's large
                    network, first stride 4 (Table 2's comparison); ga3c/tf_data: trainer input
                    through tf.data; a3c_cpu/onednn: the baseline's agents on oneDNN kernels;
  accel/...         Stooke & Abbeel: sampling with A3C-Net inference and no learning through the
                    synchronized and alternating samplers (their Figure 1b); A2C, PPO training;
                    /learn: their optimization phase alone, on one collected rollout;
                    A3C, APPO with 2 learner processes on one central store;
                    dqn_512, cat_dqn_2048, rainbow_512: the Q-value family's large batches;
                    dqn_32, cat_dqn_32: the DQN and categorical DQN presets at batch 32;
                    {dqn,rainbow}_512/tf_data: minibatches through a prefetching tf.data
                    pipeline; {dqn,rainbow}_512/async: a trainer thread beside the sampler;
  .../xla            paac, dqn/standard, ga3c, accel/{a2c,ppo}/learn, accel/{dqn,rainbow}_512
                    with the networks' calls XLA-compiled (RunConfig.jit_compile);
  .../bfloat16       paac, paac/{ale_vector,network}, paac/{ale_vector,network}/reuse,
                    dqn/{standard,both}, accel/ppo, accel/{a2c,ppo}/learn,
                    accel/{dqn,rainbow}_512 with the torsos in bfloat16 (RunConfig.compute_dtype);
  accel/fast[/float32,/bfloat16]  the time-to-score preset (gin/fast/pong.gin) as it is (its
                    compute_dtype 'auto') and in each dtype;
  .../overlap        paac, accel/{a2c,ppo} learning while sampling (OverlapConfig.overlap_learning);
  .../reuse          paac, paac/ale_vector, paac/network, accel/a2c with the update reusing the
                    acting pass's torso outputs (ActingPassConfig.reuse_activations);
  peer/tf_agents_ppo  tf-agents' PPO agent and driver on the same pool and batch as accel/ppo;
  replay/prioritized_512  a prioritized draw of 512 of 1M items with its priority update
                    (items/s; 512 over it is the time per minibatch);
  replay/uniform_512  a uniform draw of 512 stacked Pong transitions from a full 1M-step
                    replay (8.3 GB), states and next states (transitions/s).
Each row prints its spread: the min, median and max rate of the windows inside its measurement
(about a second each; a target period for the dqn rows); the accel/sample rows also print where
one time step's wall time went (simulators, policy, the rest). Timings are only comparable
within one invocation; quote ratios. `--plot PATH` draws the table as a bar chart. A failing
row shows in the table as failed with its exception's line (its traceback on stderr) and the
rows after it still run; the exit status is then 1. --num_workers defaults to a count every row
accepts within the usable CPUs (default_num_workers), not the CPU count.
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import importlib
import json
import multiprocessing
import os
import sys
import traceback

from absl import flags
import numpy as np

from common.envs import atari
from common.envs import pools
from common.launch import app
from common.launch import registry
from common.replay import prioritized
from common.replay import replay as replay_lib
from common.system import devices
from common.system import machine_load
from common.system import processes
from common.tools import timing

FLAGS = flags.FLAGS


def _define_flags():
    # Only when run as the program: each row's process imports this module again as common.bench.
    flags.DEFINE_float('seconds', 10.0, 'Measured seconds per row (after a warm-up).')
    flags.DEFINE_float('warmup_seconds', None, 'Unmeasured seconds per row before measuring; '
                       f'default {timing.CPU_WARMUP_SECONDS:g}, {timing.GPU_WARMUP_SECONDS:g} on a '
                       "machine with an NVIDIA driver and GPUs not hidden (cuDNN's autotuning "
                       'and the first XLA compilations take seconds there).')
    flags.DEFINE_string('json', None, 'Write {"rows": [...]} here.')
    flags.DEFINE_integer('num_envs', 32, 'Environments in every row.')
    flags.DEFINE_integer('num_workers', None, 'Worker processes/threads (default: the largest '
                         'count every row accepts within the usable CPUs; default_num_workers).')
    flags.DEFINE_string('game', 'pong', 'Atari game.')
    flags.DEFINE_list('rows', None, 'Only these rows (default: all).')
    flags.DEFINE_string('plot', None, 'Also draw the table as a bar chart (PNG) here.')


def env_row(kind, variant='nature', **frames):
    """The env-only rate of one pool kind with uniformly random actions, on the frames of one
    preprocessing variant (atari.VARIANTS) and AtariConfig's frame fields in frames."""

    def measure(settings):
        env_config = atari.AtariConfig(game=settings['game'], variant=variant, **frames)
        num_actions = env_config.num_actions()
        rng = np.random.default_rng(0)
        actions = rng.integers(0, num_actions, size=(64, settings['num_envs']), dtype=np.int32)
        with pools.make_pool(env_config, settings['num_envs'], seed=0, kind=kind,
                             num_workers=settings['num_workers'],
                             num_threads=settings['num_workers']) as pool:
            pool.reset()
            counter = [0]

            def step():
                pool.step(actions[counter[0] % len(actions)])
                counter[0] += 1

            return timing.rate(step, settings['num_envs'], settings['seconds'],
                          settings['warmup_seconds'])

    return measure


def prioritized_replay_row(settings):
    """Prioritized replay's bookkeeping alone: a stratified draw of 512 of 1M items, their
    importance weights and new priorities, again and again; the rate is items per second."""
    batch_size, capacity = 512, 1_000_000
    sampling = prioritized.PrioritizedSampling(capacity, alpha=0.6, seed=0)
    sampling.add(np.arange(capacity))
    sampling.update(np.arange(capacity), np.random.default_rng(0).exponential(size=capacity))
    td_errors = np.random.default_rng(1).exponential(size=(64, batch_size))
    counter = [0]

    def sample_and_update():
        indices, _ = sampling.sample(batch_size, beta=0.4)
        sampling.update(indices, td_errors[counter[0] % len(td_errors)])
        counter[0] += 1

    return timing.rate(sample_and_update, batch_size, settings['seconds'],
                       settings['warmup_seconds'])


# The uniform replay row's memory: the Q-value presets' 1M steps of 104x80 frames in 16 streams.
UNIFORM_REPLAY_CAPACITY = 1_000_000
UNIFORM_REPLAY_STREAMS = 16


def uniform_replay_row(settings):
    """Uniform replay's draw alone: 512 transitions (states and next states stacked from 104x80
    frames, 4 a stack) from a full replay of UNIFORM_REPLAY_CAPACITY steps, episodes of about
    800 steps, again and again; the rate is transitions per second."""
    batch_size, chunk = 512, 2048
    memory = replay_lib.ReplayMemory(UNIFORM_REPLAY_CAPACITY, (104, 80, 4), np.uint8, 4,
                                     num_streams=UNIFORM_REPLAY_STREAMS, seed=0)
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (chunk, 104, 80), dtype=np.uint8)
    starts = rng.random(memory.stream_capacity) < 1 / 800
    zeros = np.zeros(chunk, np.int32)
    for stream in range(memory.num_streams):
        for begin in range(0, memory.stream_capacity, chunk):
            count = min(chunk, memory.stream_capacity - begin)
            memory.add_steps(stream, frames[:count], zeros[:count], zeros[:count],
                             starts[begin:begin + count], starts[begin:begin + count])
    return timing.rate(lambda: memory.sample(batch_size), batch_size, settings['seconds'],
                       settings['warmup_seconds'])


ROWS = {
    'env/serial': env_row('serial'),
    'env/thread': env_row('thread'),
    'env/process': env_row('process'),
    'env/ale_vector': env_row('ale_vector'),
    'env/process/stooke': env_row('process', variant='stooke'),
    'env/serial/linear': env_row('serial', resize='linear'),
    'env/serial/stooke': env_row('serial', variant='stooke'),
    'env/serial/stooke/skip': env_row('serial', variant='stooke', downsample='skip'),
    'replay/prioritized_512': prioritized_replay_row,
    'replay/uniform_512': uniform_replay_row,
    **registry.bench_rows(),
}


class RowFailed(RuntimeError):
    """A bench row raised or its process died; the message holds the row's traceback, reason
    its one-line summary (the exception's last line) for the table."""

    def __init__(self, message, reason):
        super().__init__(message)
        self.reason = reason


def one_line_reason(error):
    """'ExceptionType: first line of its message', what the table shows of a failed row."""
    lines = str(error).strip().splitlines()
    return f'{type(error).__name__}: {lines[0]}' if lines else type(error).__name__


def accepts_num_workers(num_envs, num_workers):
    """Whether every row can split num_envs environments over num_workers workers: the pools
    need a divisor of num_envs, the alternating sampler and the 2-replica and 2-worker rows an
    even count, and the asynchronous rows (num_envs / 2 per learner) a divisor of half of it;
    together, an even count dividing num_envs / 2."""
    return num_workers % 2 == 0 and num_envs % (2 * num_workers) == 0


def default_num_workers(num_envs, cpus):
    """The default --num_workers: the largest count every row accepts (accepts_num_workers)
    that is at most cpus, else the smallest such count (2, on one core); where none exists
    (num_envs not a multiple of 4), the largest divisor of num_envs at most cpus, which the
    env rows accept (the rows needing an even split then fail in the table)."""
    valid = [count for count in range(1, num_envs + 1) if accepts_num_workers(num_envs, count)]
    if valid:
        within = [count for count in valid if count <= cpus]
        return max(within) if within else min(valid)
    return max(count for count in range(1, max(min(cpus, num_envs), 1) + 1)
               if num_envs % count == 0)


def _row_process(name, settings, connection):
    """Entry point of one row's process: sends ('ok', rate) or ('error', (traceback, one-line
    reason))."""
    try:
        connection.send(('ok', ROWS[name](settings)))
    except BaseException as error:  # pylint: disable=broad-except
        connection.send(('error', (traceback.format_exc(), one_line_reason(error))))
    finally:
        connection.close()


def measure_row(name, settings):
    """Runs one row in a fresh spawned process and returns its timing.measurement()."""
    context = multiprocessing.get_context('spawn')
    reader, writer = context.Pipe(duplex=False)
    # By its importable name: under `python -m common.bench` this module is __main__, which a
    # spawned process cannot look functions up in.
    bench = importlib.import_module('common.bench')
    target = bench._row_process  # pylint: disable=protected-access
    process = context.Process(target=target, args=(name, settings, writer),
                              name=f'bench-{name}')
    try:
        # A row that only steps simulators (or draws from replay, in numpy) sees no GPU; the
        # others see what their entry points would.
        processes.start_process(process, gpus=devices.NO_GPU if name.startswith(
            ('env/', 'replay/')) else None)
        writer.close()
        try:
            status, value = reader.recv()
        except EOFError:
            process.join()
            reason = f'its process died (exit code {process.exitcode})'
            raise RowFailed(f'row {name}: {reason}', reason)
        process.join()
    finally:
        processes.end_process(process, terminate_seconds=10)  # after Ctrl-C or an error here
        reader.close()
    if status != 'ok':
        text, reason = value
        raise RowFailed(f'row {name} failed:\n{text}', reason)
    return value


def run_rows(names, settings):
    """Measures every row in turn; a failing row is printed with its traceback (stderr) and
    kept in the rows as status 'failed' with its one-line reason, and the next row runs."""
    rows = []
    for name in names:
        print(f'{name} ...', flush=True)
        try:
            result = measure_row(name, settings)
        except RowFailed as error:
            print(f'{error}', file=sys.stderr, flush=True)
            print(f'  row {name} failed: {error.reason}', flush=True)
            rows.append({'name': name, 'num_envs': settings['num_envs'], 'status': 'failed',
                         'error': error.reason})
            continue
        rows.append(dict(result, name=name, num_envs=settings['num_envs'], status='ok'))
        print(f"  {result['steps_per_sec']:,.0f} steps/s (windows: min {result['min']:,.0f}, "
              f"median {result['median']:,.0f}, max {result['max']:,.0f})", flush=True)
        if 'part_ms' in result:
            print('  per time step: ' + ', '.join(
                f'{part} {ms:.2f} ms' for part, ms in result['part_ms'].items()), flush=True)
    return rows


def measured(rows):
    """The rows that ran to the end (a failed row has status 'failed' and no rates)."""
    return [row for row in rows if row.get('status', 'ok') == 'ok']


def best_env_rate(rows):
    """The ceiling the table compares against: the fastest env-only row, None without one."""
    env_rates = [row['steps_per_sec'] for row in measured(rows)
                 if row['name'].startswith('env/')]
    return max(env_rates) if env_rates else None


def format_table(rows):
    """The rows as a text table; a failed row shows 'failed' and its one-line reason."""
    ceiling = best_env_rate(rows)
    lines = [f"{'row':<26}{'envs':>6}{'steps/s':>10}{'min':>9}{'median':>9}{'max':>9}"
             f"{'/ best env':>12}  status"]
    for row in rows:
        if row.get('status', 'ok') != 'ok':
            lines.append(f"{row['name']:<26}{row['num_envs']:>6}{'-':>10}{'-':>9}{'-':>9}"
                         f"{'-':>9}{'-':>12}  failed: {row['error']}")
            continue
        ratio = f"{row['steps_per_sec'] / ceiling:.2f}" if ceiling else '-'
        lines.append(f"{row['name']:<26}{row['num_envs']:>6}{row['steps_per_sec']:>10,.0f}"
                     f"{row['min']:>9,.0f}{row['median']:>9,.0f}{row['max']:>9,.0f}{ratio:>12}"
                     f"  ok")
    return '\n'.join(lines)


def main():
    names = FLAGS.rows or list(ROWS)
    unknown = [name for name in names if name not in ROWS]
    if unknown:
        app.fail(f'unknown --rows {unknown}; allowed: {list(ROWS)}')
    if FLAGS.num_envs <= 0 or FLAGS.seconds <= 0:
        app.fail(f'--num_envs ({FLAGS.num_envs}) and --seconds ({FLAGS.seconds}) must be > 0')
    try:
        atari.AtariConfig(game=FLAGS.game).validate()
    except ValueError as error:
        app.fail(f'--game: {error}')
    num_workers = FLAGS.num_workers or default_num_workers(FLAGS.num_envs,
                                                           machine_load.usable_cores())
    warmup = timing.warmup_seconds(FLAGS.warmup_seconds)
    if warmup < 0:
        app.fail(f'--warmup_seconds={warmup!r} must be >= 0')
    settings = {'seconds': FLAGS.seconds, 'warmup_seconds': warmup,
                'num_envs': FLAGS.num_envs, 'game': FLAGS.game, 'num_workers': num_workers}
    print(f'{FLAGS.num_envs} environments, {num_workers} workers, {warmup:g} s warm-up per row',
          flush=True)
    rows = run_rows(names, settings)
    print(format_table(rows))
    if FLAGS.plot:
        from common.tools import plots  # pylint: disable=import-outside-toplevel  (matplotlib)
        # A failed row has no rate to draw; the table names it.
        plots.plot_bench(measured(rows), best_env_rate(rows), FLAGS.plot)
        print(f'wrote {FLAGS.plot}')
    if FLAGS.json:
        with open(FLAGS.json, 'w') as f:
            json.dump({'rows': rows, 'cpu_count': os.cpu_count(),
                       'usable_cores': machine_load.usable_cores(), 'num_workers': num_workers,
                       'argv': sys.argv[1:]}, f, indent=2)
        print(f'wrote {FLAGS.json}')
    failed = [row['name'] for row in rows if row['status'] != 'ok']
    if failed:
        app.fail(f'{len(failed)} of {len(rows)} rows failed: {", ".join(failed)}', exit_code=1)


if __name__ == '__main__':
    _define_flags()
    app.execute(main)
