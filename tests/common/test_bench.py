"""common.bench runs each row in its own process and reports a failing row with its traceback."""
import multiprocessing

import pytest

from common import bench

SETTINGS = {'seconds': 0.3, 'warmup_seconds': 0.1, 'num_envs': 2, 'game': 'pong',
            'num_workers': 1}


def test_a_row_returns_its_rate_from_its_own_process():
    rate = bench.measure_row('env/serial', SETTINGS)
    assert rate > 0
    assert not multiprocessing.active_children()


def test_a_failing_row_raises_with_its_traceback_and_leaves_no_process():
    with pytest.raises(bench.RowFailed, match='(?s)row env/serial failed:.*Traceback'):
        bench.measure_row('env/serial', dict(SETTINGS, game='no_such_game'))
    assert not multiprocessing.active_children()
