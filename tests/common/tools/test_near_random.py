"""The suite's halfway look (common/tools/near_random.py): the margin against Mnih et al.
(2015)'s scores by hand, the warning's line, and a run's metrics read once at half its budget."""
import math

import pytest

from common.tools import near_random

HEADER = 'wall_time,env_steps,episodes,score_mean_100\n'


def test_the_margin_is_2_points_or_2_percent_of_the_human_random_gap():
    assert near_random.margin('breakout') == 2.0  # 2% of 31.8 - 1.7 = 0.602
    assert near_random.margin('qbert') == pytest.approx(0.02 * (13455.0 - 163.9))


def test_a_score_near_random_is_named_with_what_to_look_at():
    line = near_random.warning('breakout', 2_500_000, 5_000_000, 3.6, 'runs/b')
    assert line == ('warning: breakout at 2,500,000 of 5,000,000 steps scores 3.6 (the last 100 '
                    'episodes), within 2 of random (1.7): look before the rest is spent: python '
                    '-m common.watch --run_dir=runs/b (frames, action set, lives, FIRE, rewards)')
    assert near_random.warning('breakout', 2_500_000, 5_000_000, -1.0, 'runs/b') is not None
    assert near_random.warning('breakout', 2_500_000, 5_000_000, 3.8, 'runs/b') is None
    assert near_random.warning('qbert', 5_000_000, 10_000_000, 163.9 + 265.0, 'q') is not None
    assert near_random.warning('qbert', 5_000_000, 10_000_000, 163.9 + 266.0, 'q') is None
    assert near_random.warning('breakout', 10, 20, math.nan, 'runs/b') is None


def test_the_look_reads_the_metrics_at_half_the_budget_once(tmp_path, capsys):
    now = [0.0]
    look = near_random.HalfwayLook('breakout', 1000, str(tmp_path), '[1/1 breakout]',
                                   clock=lambda: now[0])
    look('a line before any metrics')
    metrics = tmp_path / 'metrics.csv'
    metrics.write_text(HEADER + '1.0,400,3,1.5\n')
    now[0] = 30.0
    look('too soon after the last check: not read')
    now[0] = 61.0
    look('read: before half the budget')
    assert look.checked_at is None and capsys.readouterr().out == ''
    metrics.write_text(HEADER + '1.0,400,3,1.5\n2.0,500,5,2.0\n3.0,6')  # a row being written
    now[0] = 122.0
    look('read: at half the budget, near random')
    assert look.checked_at == 500
    assert capsys.readouterr().out == f'[1/1 breakout] {look.said}\n'
    assert look.said.startswith('warning: breakout at 500 of 1,000 steps scores 2.0')
    metrics.write_text(HEADER + '1.0,900,9,1.0\n')
    now[0] = 500.0
    look('judged once: not read again')
    assert look.checked_at == 500 and capsys.readouterr().out == ''


def test_a_run_past_random_at_half_its_budget_says_nothing(tmp_path, capsys):
    (tmp_path / 'metrics.csv').write_text(HEADER + '1.0,600,9,12.0\n')
    look = near_random.HalfwayLook('breakout', 1000, str(tmp_path), '[t]')
    look('line')
    assert look.checked_at == 600 and look.said is None and capsys.readouterr().out == ''


def test_no_score_yet_at_half_the_budget_is_looked_at_again(tmp_path, capsys):
    metrics = tmp_path / 'metrics.csv'
    metrics.write_text(HEADER + '1.0,600,0,\n')
    now = [0.0]
    look = near_random.HalfwayLook('breakout', 1000, str(tmp_path), '[t]', clock=lambda: now[0])
    look('no episode has ended yet')
    assert look.checked_at is None
    metrics.write_text(HEADER + '1.0,600,0,\n2.0,700,3,1.0\n')
    now[0] = 60.0
    look('now a score')
    assert look.checked_at == 700 and capsys.readouterr().out.startswith('[t] warning: breakout')
