"""common.bench runs each row in its own process and reports a failing row with its traceback."""
import multiprocessing

import pytest

from common import bench

SETTINGS = {'seconds': 0.3, 'warmup_seconds': 0.1, 'num_envs': 2, 'game': 'pong',
            'num_workers': 1}


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
    assert table[3].split() == ['paac', '32', '500', '400', '510', '600', '0.25']
    figure = plots.draw_bench(rows, 2000.0)
    bars = figure.axes[0].patches
    assert sorted(bar.get_width() for bar in bars) == [500.0, 1000.0, 2000.0]
    assert [line.get_xdata()[0] for line in figure.axes[0].lines
            if line.get_linestyle() == '--'] == [2000.0]
    path = plots.plot_bench(rows, 2000.0, str(tmp_path / 'bench' / 'bench.png'))
    with open(path, 'rb') as f:
        assert f.read(8) == b'\x89PNG\r\n\x1a\n'
