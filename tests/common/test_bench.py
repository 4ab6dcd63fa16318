"""common.bench runs each row in its own process and reports a failing row with its traceback."""
import multiprocessing

import pytest

from common import bench
from common.system import machine_load

SETTINGS = {'seconds': 0.3, 'warmup_seconds': 0.1, 'num_envs': 2, 'game': 'pong',
            'num_workers': 1}


@pytest.mark.slow
def test_a_row_returns_its_rate_from_its_own_process():
    result = bench.measure_row('env/serial', SETTINGS)
    assert result['steps_per_sec'] > 0 and result['windows'] >= 1
    assert not multiprocessing.active_children()


def test_the_prioritized_replay_row_times_draws_and_updates_over_a_million_items(monkeypatch):
    calls = []
    original_sample = bench.prioritized.PrioritizedSampling.sample

    def counted_sample(self, batch_size, beta):
        calls.append((self.capacity, batch_size))
        return original_sample(self, batch_size, beta)

    monkeypatch.setattr(bench.prioritized.PrioritizedSampling, 'sample', counted_sample)
    result = bench.ROWS['replay/prioritized_512'](SETTINGS)
    assert set(calls) == {(1_000_000, 512)}
    assert result['steps_per_sec'] > 0 and result['windows'] >= 1


def test_the_uniform_replay_row_draws_from_a_full_replay_of_pong_stacks(monkeypatch):
    monkeypatch.setattr(bench, 'UNIFORM_REPLAY_CAPACITY', 16 * 3000)
    draws = []
    original_sample = bench.replay_lib.ReplayMemory.sample

    def counted_sample(self, batch_size):
        assert len(self) == self.capacity == 16 * 3000 and self.num_streams == 16
        draws.append(original_sample(self, batch_size))
        return draws[-1]

    monkeypatch.setattr(bench.replay_lib.ReplayMemory, 'sample', counted_sample)
    result = bench.ROWS['replay/uniform_512'](SETTINGS)
    assert result['steps_per_sec'] > 0 and draws
    assert draws[0].observations.shape == draws[0].next_observations.shape == (512, 104, 80, 4)


@pytest.mark.slow
def test_a_failing_row_raises_with_its_traceback_and_leaves_no_process():
    with pytest.raises(bench.RowFailed, match='(?s)row env/serial failed:.*Traceback'):
        bench.measure_row('env/serial', dict(SETTINGS, game='no_such_game'))
    assert not multiprocessing.active_children()


def test_measurement_merges_chunks_into_windows_and_keeps_the_spread():
    from common.tools import timing
    # 0.5 s chunks: windows of two chunks each (1 s), rates 100, 300, 200 steps/s.
    chunks = [(50, 0.5), (50, 0.5), (150, 0.5), (150, 0.5), (100, 0.5), (100, 0.5)]
    result = timing.measurement(chunks)
    assert result == {'steps_per_sec': 200.0, 'min': 100.0, 'median': 200.0, 'max': 300.0,
                      'windows': 3, 'seconds': 3.0}
    # A last window shorter than half a window is folded into the total, not the spread.
    assert timing.measurement(chunks + [(1, 0.1)])['windows'] == 3
    # window_seconds=0: every chunk is a window (the DQN rows' target periods).
    assert timing.measurement([(4000, 20.0), (4000, 10.0)], window_seconds=0.0)['max'] == 400.0
    with pytest.raises(ValueError, match='empty'):
        timing.measurement([])


def test_rate_counts_calls_after_the_warm_up():
    from common.tools import timing
    calls = []
    result = timing.rate(lambda: calls.append(1), steps_per_call=4, seconds=0.2,
                         warmup_seconds=0.05)
    assert result['windows'] >= 1 and result['steps_per_sec'] > 0
    assert result['min'] <= result['median'] <= result['max']


def test_rate_calls_on_start_once_between_the_warm_up_and_the_timed_calls():
    from common.tools import timing
    calls = []
    result = timing.rate(lambda: calls.append('step'), steps_per_call=4, seconds=0.2,
                         warmup_seconds=0.05, on_start=lambda: calls.append('start'))
    start = calls.index('start')
    assert calls.count('start') == 1 and start > 0  # after at least one warm-up call
    timed_steps = len(calls) - start - 1
    assert result['steps_per_sec'] * result['seconds'] == pytest.approx(4 * timed_steps)


def test_table_and_plot_show_every_row_against_the_best_env_rate(tmp_path):
    from common.tools import plots
    rows = [{'name': 'env/serial', 'num_envs': 32, 'steps_per_sec': 1000.0, 'min': 900.0,
             'median': 1000.0, 'max': 1100.0, 'windows': 10},
            {'name': 'env/process', 'num_envs': 32, 'steps_per_sec': 2000.0, 'min': 1800.0,
             'median': 2000.0, 'max': 2100.0, 'windows': 10},
            {'name': 'paac', 'num_envs': 32, 'steps_per_sec': 500.0, 'min': 400.0,
             'median': 510.0, 'max': 600.0, 'windows': 10}]
    assert bench.best_env_rate(rows) == 2000.0
    table = bench.format_table(rows).splitlines()
    assert table[3].split() == ['paac', '32', '500', '400', '510', '600', '0.25', 'ok']
    figure = plots.draw_bench(rows, 2000.0)
    bars = figure.axes[0].patches
    assert sorted(bar.get_width() for bar in bars) == [500.0, 1000.0, 2000.0]
    assert [line.get_xdata()[0] for line in figure.axes[0].lines
            if line.get_linestyle() == '--'] == [2000.0]
    path = plots.plot_bench(rows, 2000.0, str(tmp_path / 'bench' / 'bench.png'))
    with open(path, 'rb') as f:
        assert f.read(8) == b'\x89PNG\r\n\x1a\n'


@pytest.mark.slow
def test_a_failing_row_is_reported_in_the_table_and_the_next_rows_still_run(monkeypatch,
                                                                            capsys):
    """The first row fails for real (its process raises: no such game); the rows after it still
    run, and the table shows it as failed with the exception's line."""
    real_measure_row = bench.measure_row
    ran = []

    def measure_row(name, settings):
        ran.append(name)
        if name == 'env/serial':
            return real_measure_row(name, dict(settings, game='no_such_game'))
        return {'steps_per_sec': 50.0, 'min': 40.0, 'median': 50.0, 'max': 60.0,
                'windows': 3, 'seconds': 3.0}

    monkeypatch.setattr(bench, 'measure_row', measure_row)
    rows = bench.run_rows(['env/serial', 'replay/prioritized_512', 'paac'], SETTINGS)
    assert ran == ['env/serial', 'replay/prioritized_512', 'paac']
    assert [row['status'] for row in rows] == ['failed', 'ok', 'ok']
    reason = rows[0]['error']
    assert reason.startswith('TypeError: loadROM(): incompatible function arguments')
    assert '\n' not in reason
    assert f'row env/serial failed: {reason}' in capsys.readouterr().out
    table = bench.format_table(rows).splitlines()
    assert table[0].split()[-1] == 'status'
    assert table[1].split()[:3] == ['env/serial', '2', '-']
    assert table[1].endswith(f'failed: {reason}')
    assert table[2].split() == ['replay/prioritized_512', '2', '50', '40', '50', '60', '-', 'ok']
    assert bench.best_env_rate(rows) is None  # the failed env row is no ceiling
    assert not multiprocessing.active_children()


def test_the_one_line_reason_is_the_exception_and_its_first_line():
    assert bench.one_line_reason(ValueError('bad game\n  more text')) == 'ValueError: bad game'
    assert bench.one_line_reason(KeyboardInterrupt()) == 'KeyboardInterrupt'


def _check_every_row_accepts(workers):
    """Validates the configurations of the rows with the strictest needs for 32 environments
    over workers; raises (ValueError or ConfigError) naming the first that refuses."""
    from accel_tf import bench_rows as accel_rows
    from common.envs import atari
    from common.envs import pools
    settings = dict(SETTINGS, num_envs=32, num_workers=workers)
    pools.validate_pool_config(atari.AtariConfig(game='pong'), 32, num_workers=workers)
    pools.validate_pool_config(atari.AtariConfig(game='pong'), 32, kind='thread',
                               num_threads=workers)
    rows = [accel_rows.configure_row(settings, 'a2c_pong', 'alternating'),
            accel_rows.configure_row(dict(settings, num_envs=16), 'a3c_pong', 'synchronized',
                                     ['AccelConfig.num_actor_learners = 2']),
            accel_rows.configure_row(settings, 'a2c_pong', 'synchronized', [
                "DistributeConfig.strategy = 'mirrored'", 'DistributeConfig.num_replicas = 2'])]
    assert [config.num_envs for config in rows] == [32, 16, 32]


@pytest.mark.parametrize('cpu_count, expected', [(1, 2), (2, 2), (3, 2), (4, 4), (6, 4),
                                                 (16, 16), (24, 16), (64, 16), (96, 16)])
def test_the_default_worker_count_is_one_every_row_accepts(monkeypatch, cpu_count, expected):
    """On any core count the default splits the bench's 32 environments as every row needs:
    the pools (a divisor), the alternating sampler (even), the asynchronous rows (a divisor of
    the 16 per learner); on one core it is 2, not the 1 the alternating sampler refuses. The
    CPU count itself, the old default, is refused on all but 2, 4 and 16 cores."""
    from common.system import errors
    monkeypatch.setattr(bench.os, 'cpu_count', lambda: cpu_count)
    monkeypatch.setattr(bench.os, 'sched_getaffinity', lambda pid: set(range(cpu_count)),
                        raising=False)
    assert machine_load.usable_cores() == cpu_count
    workers = bench.default_num_workers(32, machine_load.usable_cores())
    assert workers == expected
    _check_every_row_accepts(workers)
    if cpu_count not in (2, 4, 16):
        with pytest.raises((ValueError, errors.ConfigError)):
            _check_every_row_accepts(cpu_count)


def test_the_default_worker_count_keeps_within_the_affinity_mask(monkeypatch):
    monkeypatch.setattr(bench.os, 'cpu_count', lambda: 64)
    monkeypatch.setattr(bench.os, 'sched_getaffinity', lambda pid: {0, 1, 2, 3, 4, 5},
                        raising=False)
    assert machine_load.usable_cores() == 6
    assert bench.default_num_workers(32, machine_load.usable_cores()) == 4
    # No count splits 6 environments evenly in two halves of even counts: the largest divisor.
    assert bench.default_num_workers(6, 4) == 3
    assert bench.default_num_workers(8, 1) == 2


def test_the_warm_up_is_longer_where_a_gpu_may_compute(monkeypatch):
    """cuDNN's autotuning and the first XLA compilations take seconds on a GPU: its rows warm up
    longer unless --warmup_seconds says otherwise."""
    from common.system import devices
    from common.tools import timing
    monkeypatch.setattr(devices, 'nvidia_driver', lambda: None)
    assert timing.warmup_seconds() == timing.CPU_WARMUP_SECONDS == 2.0
    monkeypatch.setattr(devices, 'nvidia_driver', lambda: '/proc/driver/nvidia/version')
    assert timing.warmup_seconds(environ={}) == timing.GPU_WARMUP_SECONDS == 10.0
    assert timing.warmup_seconds(environ={devices.VISIBLE_ENV: ''}) == 2.0  # GPUs hidden
    assert timing.warmup_seconds(0.5, environ={}) == 0.5
