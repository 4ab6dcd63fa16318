"""Fast-DQN rows for `python -m common.bench`: training steps per second, standard vs both.

Each row is what `python -m dqn_tf.speedtest --steps=12000 --target_period=4000` measures for
its mode: the paper's Pong config with epsilon fixed at 0.1, the speed test's untimed
prepopulation and tracing warm-up, then whole target periods of C = BENCH_PERIOD steps (the
concurrent modes overlap acting and training within a period and join at its end, so a period
much shorter than the speed test's makes the join dominate: C = 400 gave both/W=8 0.93x standard
where the speed test gave 1.65x). The spread is over the BENCH_PERIODS periods. The rows ignore
the bench's --seconds: a period takes 10-20 s on a 2-core CPU.
"""
from common.system import devices
from common.tools import timing
from dqn_tf import speedtest

BENCH_PERIOD = 4000  # C: divisible by W = 8 and F = 4
BENCH_PERIODS = 3


def _rate(settings, mode, num_actors, **options):
    """Training steps per second of one mode over BENCH_PERIODS whole target periods; options:
    speedtest_config's jit_compile, compute_dtype."""
    config = speedtest.speedtest_config(mode, num_actors, game=settings['game'],
                                        target_period=BENCH_PERIOD, **options)
    devices.set_intra_op_threads(config.intra_op_threads())  # each bench row has its own process
    with speedtest.Session(config) as session:
        chunks = [(BENCH_PERIOD, session.run(BENCH_PERIOD)) for _ in range(BENCH_PERIODS)]
    return timing.measurement(chunks, window_seconds=0.0)


ROWS = {
    # Standard DQN with 1 actor thread: the baseline of Table 1.
    'dqn/standard': lambda settings: _rate(settings, 'standard', 1),
    # Algorithm 1 with W=8 actor threads: the fastest variant of Table 1.
    'dqn/both': lambda settings: _rate(settings, 'both', 8),
    # The networks' calls XLA-compiled (RunConfig.jit_compile; common/learners/xla.py).
    'dqn/standard/xla': lambda settings: _rate(settings, 'standard', 1, jit_compile=True),
    # The networks' torsos in bfloat16 (RunConfig.compute_dtype; common/learners/networks.py).
    'dqn/standard/bfloat16': lambda settings: _rate(settings, 'standard', 1,
                                                    compute_dtype='bfloat16'),
    'dqn/both/bfloat16': lambda settings: _rate(settings, 'both', 8, compute_dtype='bfloat16'),
}
