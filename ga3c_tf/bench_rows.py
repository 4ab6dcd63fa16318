"""Rows of `python -m common.bench` for GA3C and the CPU A3C baseline (paper, Table 2).

Each row trains for real (predict + step + update) on the bench's game with fixed settings
(no annealing) and returns PPS, predictions (= env steps) per second, with its per-second
spread. GA3C runs num_envs agents with NP = NT = 2 and the paper's minimum training batch;
A3C-CPU runs one agent process per worker (the bench's num_workers; ga3c_tf.reproduce gives it
the CPUs this process may run on), each with its own model replica, as A3C's one agent per core.
'large' is the paper's larger DNN with first stride 4 (Table 2's first large row).
"""
import os
import time

from common.launch import app
from common.system import devices
from common.tools import timing

GIN_FILE = os.path.join(app.PROJECT_ROOT, 'gin/ga3c/paper.gin')
LARGE = ["GA3CConfig.network = 'ga3c_large'", "GA3CConfig.torso_kwargs = {'first_stride': 4}"]


def _config(settings, algorithm, extra_bindings):
    from ga3c_tf import main as ga3c_main  # pylint: disable=import-outside-toplevel
    num_agents = settings['num_envs'] if algorithm == 'ga3c' else settings['num_workers']
    bindings = [f"AtariConfig.game = '{settings['game']}'",
                f"GA3CConfig.algorithm = '{algorithm}'",
                f'GA3CConfig.num_agents = {num_agents}',
                f'GA3CConfig.max_agents = {max(num_agents, 1)}',
                'GA3CConfig.dynamic_settings = False'] + list(extra_bindings)
    return ga3c_main.configure([GIN_FILE], bindings)


def _measure(server, settings, ready):
    """Waits until ready() (tracing done), warms up, then returns timing.counter_rate of the
    predictions."""
    deadline = time.monotonic() + 300
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError('bench: the run did not start within 300 s')
        server.check_agents()
        time.sleep(0.1)
    time.sleep(settings['warmup_seconds'])
    return timing.counter_rate(lambda: server.counts()['predictions'], settings['seconds'],
                               server.check_agents)


def ga3c_pps(settings, extra_bindings=()):
    """GA3C's PPS: num_envs agent processes, 2 predictor and 2 trainer threads."""
    from ga3c_tf import learner as learner_lib  # pylint: disable=import-outside-toplevel
    from ga3c_tf import server as server_lib  # pylint: disable=import-outside-toplevel
    config = _config(settings, 'ga3c', extra_bindings)
    learner = learner_lib.build_learner(config)
    with server_lib.GA3CServer(config, learner) as server:
        server.apply((config.num_predictors, config.num_trainers, config.num_agents))
        # Ready once the agents (32 processes starting on few cores) have all been playing.
        return _measure(server, settings, lambda: server.counts()['updates'] >= 2 and
                        server.counts()['predictions'] >= 50 * config.num_agents)


def a3c_cpu_pps(settings, extra_bindings=()):
    """A3C-CPU's PPS: num_workers agent processes, each with its own model replica."""
    from ga3c_tf import a3c_cpu  # pylint: disable=import-outside-toplevel
    from ga3c_tf import learner as learner_lib  # pylint: disable=import-outside-toplevel
    config = _config(settings, 'a3c_cpu', extra_bindings)
    devices.hide_gpus_here()  # the CPU baseline, as its runs: no process of it on a GPU
    learner = learner_lib.build_learner(config)
    with a3c_cpu.A3CServer(config, learner) as server:
        server.apply(config.num_agents)
        return _measure(server, settings,
                        lambda: (server.counters[:, a3c_cpu.UPDATES] >= 10).sum()
                        >= config.num_agents)


ROWS = {
    'ga3c': ga3c_pps,
    'a3c_cpu': a3c_cpu_pps,
    'ga3c/large': lambda settings: ga3c_pps(settings, LARGE),
    'a3c_cpu/large': lambda settings: a3c_cpu_pps(settings, LARGE),
    # Trainer input through tf.data instead of straight into the tf.function (the default).
    'ga3c/tf_data': lambda settings: ga3c_pps(settings, ["GA3CConfig.trainer_input = 'tf_data'"]),
    # The network's calls XLA-compiled (RunConfig.jit_compile), batches padded to buckets
    # (pad_batches 'auto' pads with XLA, which compiles once per shape).
    'ga3c/xla': lambda settings: ga3c_pps(settings, ['GA3CConfig.jit_compile = True']),
    # The baseline's agents on oneDNN kernels too, to show why they default to the stock ones.
    'a3c_cpu/onednn': lambda settings: a3c_cpu_pps(settings, ['GA3CConfig.a3c_onednn = True']),
}
