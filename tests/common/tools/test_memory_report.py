"""memory_report: a session's rss_mb after the warm-up, against hand-computed windows and ranges."""
import math
import os
import subprocess
import sys

import pytest

from common.launch import app
from common.tools import memory_report


def _rows(memory, minutes_apart=5.0, replay=None, start=''):
    """metrics rows, one per memory value, minutes_apart apart, 1,000 steps each."""
    rows = []
    for index, mb in enumerate(memory):
        row = {'wall_time': str(60 * minutes_apart * (index + 1)),
               'env_steps': str(1000 * (index + 1)), 'rss_mb': str(mb), 'session_start': ''}
        if replay is not None:
            row['replay_size'] = str(replay[index])
        rows.append(row)
    if rows:
        rows[0]['session_start'] = start or 'new'
    return rows


def test_flat_memory_after_ten_minutes_of_warm_up():
    # Rows at 5, 10, ..., 30 min: the window starts 10 min after the first row (at 15 min).
    rows = _rows([500, 900, 1000, 1020, 1010, 1030])
    result = memory_report.report(rows, 'run')
    assert result['window_start_steps'] == 3000 and result['window_end_steps'] == 6000
    assert result['window_minutes'] == pytest.approx(15.0)
    assert (result['start_mb'], result['min_mb'], result['max_mb'], result['end_mb']) == \
        (1000, 1000, 1030, 1030)
    assert result['range_pct'] == pytest.approx(3.0)  # (1030 - 1000) / 1000
    # Slope by hand: times 0, 5, 10, 15 min around 7.5; values around 1015.
    # sum (t - 7.5)(v - 1015) = (-7.5)(-15) + (-2.5)(5) + (2.5)(-5) + (7.5)(15) = 200 MB min,
    # over sum (t - 7.5)^2 = 125 min^2: 1.6 MB/min, 96 MB/h.
    assert result['mb_per_hour'] == pytest.approx(96.0)
    assert result['verdict'] == 'flat'


def test_a_leak_is_growth_past_five_percent_and_a_swing_is_a_move():
    # The window starts at the third row (15 min) in both.
    grows = memory_report.report(_rows([800, 1000, 1020, 1040, 1060, 1080, 1100]))
    assert grows['range_pct'] == pytest.approx(100 * 80 / 1020) and grows['verdict'] == 'grows'
    swings = memory_report.report(_rows([800, 1000, 1100, 1000, 1100, 1000, 1000]))
    assert swings['range_pct'] == pytest.approx(100 * 100 / 1100)
    assert swings['mb_per_hour'] < 0 and swings['verdict'] == 'moves'


def test_the_window_waits_for_the_replay_to_be_full():
    rows = _rows([500, 700, 900, 1000, 1005, 1010, 1000], minutes_apart=1.0,
                 replay=[100, 200, 300, 400, 400, 400, 400])
    assert memory_report.window_start(rows, warmup_minutes=2.0) == 3  # full from the 4th row
    assert memory_report.window_start(rows, warmup_minutes=5.0) == 5  # later: the minutes
    result = memory_report.report(rows, warmup_minutes=2.0)
    assert result['window_start_steps'] == 4000 and result['start_mb'] == 1000
    assert result['range_pct'] == pytest.approx(1.0) and result['verdict'] == 'flat'
    filling = _rows([500, 600, 700, 800, 900], minutes_apart=10.0, replay=[1, 2, 3, 4, 5])
    assert memory_report.report(filling)['verdict'].startswith('no window: 1 rows')


def test_only_the_last_session_counts_and_rows_without_memory_are_skipped():
    first = _rows([3000, 3100, 3200, 3300])  # an older process tree, and growing
    second = _rows([900, 1000, 1000, 1000, 1000], start='resumed')
    for row in second:
        row['env_steps'] = str(int(row['env_steps']) + 4000)
    before_the_column = [{'wall_time': '1', 'env_steps': '1', 'rss_mb': ''}]
    rows = before_the_column + first + second
    assert [row['rss_mb'] for row in memory_report.last_session(rows)] == [
        '900', '1000', '1000', '1000', '1000']
    result = memory_report.report(rows)
    assert result['window_start_steps'] == 7000 and result['range_pct'] == 0.0
    assert result['verdict'] == 'flat'
    assert memory_report.report([{'wall_time': '1', 'env_steps': '1'}])['verdict'] == \
        'no rss_mb column'
    assert math.isnan(memory_report.report([])['start_mb'])


def test_compare_prints_the_memory_table(tmp_path):
    run_dir = tmp_path / 'ga3c-pong'
    os.makedirs(run_dir)
    (run_dir / app.INVOCATION_FILE).write_text('{"paper": "ga3c"}')
    header = 'wall_time,env_steps,frames,updates,episodes,score_mean_100,steps_per_sec,rss_mb\n'
    body = ''.join(f'{300 * (i + 1)},{1000 * (i + 1)},{4000 * (i + 1)},1,1,-20,10,{mb}\n'
                   for i, mb in enumerate([500, 900, 1000, 1020, 1010, 1030]))
    (run_dir / 'metrics.csv').write_text(header + body)
    command = [sys.executable, '-m', 'common.compare', str(run_dir), '--memory']
    env = dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    table = result.stdout.strip().split('\n\n')[-1].splitlines()
    assert table[0].startswith('memory of the last session after the warm-up (10 min')
    assert table[2].split() == ['ga3c-pong', '3000', '6000', '15.00', '1,000.00', '1,000.00',
                                '1,030.00', '1,030.00', '3.00', '96.00', 'flat']
    bad = subprocess.run(command + ['--warmup_minutes=-1'], capture_output=True, text=True,
                         env=env, timeout=60)
    assert bad.returncode != 0 and 'warmup_minutes' in bad.stderr
