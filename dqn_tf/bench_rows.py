"""Fast-DQN rows for `python -m common.bench`: training steps per second, standard vs both.

Each row builds the paper's Pong config in one mode (epsilon fixed at 0.1 as in the speed test),
prepopulates untimed, then trains in target periods of BENCH_PERIOD steps: first for the
bench's warm-up seconds, then for its measured seconds.
"""
import time

from common import app
from dqn_tf import speedtest

BENCH_PERIOD = 400  # C for the bench rows: divisible by W=8 and F=4, short enough to fit seconds


def _rate(settings, mode, num_workers):
    """Measured training steps per second of one mode after a warm-up."""
    config = speedtest.speedtest_config(mode, num_workers, game=settings['game'],
                                        target_period=BENCH_PERIOD)
    app.set_intra_op_threads(config.intra_op_threads())  # each bench row has its own process
    with speedtest.Session(config) as session:
        end_warmup = time.perf_counter() + settings['warmup_seconds']
        while time.perf_counter() < end_warmup:
            session.run(BENCH_PERIOD)
        steps = 0
        seconds = 0.0
        while seconds < settings['seconds']:
            seconds += session.run(BENCH_PERIOD)
            steps += BENCH_PERIOD
    return steps / seconds


ROWS = {
    # Standard DQN with 1 actor thread: the baseline of Table 1.
    'dqn/standard': lambda settings: _rate(settings, 'standard', 1),
    # Algorithm 1 with W=8 actor threads: the fastest variant of Table 1.
    'dqn/both': lambda settings: _rate(settings, 'both', 8),
}
