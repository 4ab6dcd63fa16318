"""run_clock: held and starved log intervals are found and left off the own clock; time to a
score is read on both clocks."""
import json
import math
import os

import pytest

from common.launch import app
from common.run import run_record
from common.tools import run_clock


def _rows(specs):
    """specs: (interval seconds, run_cpu_cores, load_1m, score) per row; steps 1000 a row."""
    rows, wall = [], 0.0
    for index, (interval, cores, load, score) in enumerate(specs):
        wall += interval
        rows.append({'wall_time': str(wall), 'env_steps': str(1000 * (index + 1)),
                     'run_cpu_cores': '' if cores is None else str(cores),
                     'load_1m': '' if load is None else str(load), 'score_mean_100': str(score)})
    return rows


def test_a_held_interval_counts_only_the_cpu_it_got():
    # Usual: 10 s at 2 cores. Row 3 was stopped for ~15 minutes and used 10 s x 2 cores.
    rows = _rows([(10, 2.0, 1.9, -21), (10, 2.0, 2.0, -20), (910, 2.0 * 10 / 910, 0.1, -19),
                  (10, 2.0, 2.0, -15)])
    marks = run_clock.mark_rows(rows, cores=2)
    assert [mark for mark, _, _ in marks] == ['', '', 'held', '']
    assert marks[2][2] == pytest.approx(10.0)  # 910 s x (0.022 / 2)
    assert run_clock.own_hours(rows, 2)[-1] == pytest.approx(40 / 3600)
    lost, unknown = run_clock.lost_share(rows, 2)
    assert (lost, unknown) == (pytest.approx(900.0), 0.0)


def test_an_evaluation_round_is_the_run_s_own_time_not_a_hold():
    # Row 3 holds a 600 s single-threaded evaluation (at 2,500 steps) beside its 10 s of
    # training: 610 s at 1/61 of the usual CPU would read as held, costing it 600 s.
    rows = _rows([(10, 2.0, 1.0, -21), (10, 2.0, 1.0, -20), (610, 2.0 * 10 / 610 + 0.03, 1.0,
                                                             -19), (10, 2.0, 1.0, -15)])
    assert [mark for mark, _, _ in run_clock.mark_rows(rows, cores=2)][2] == 'held'
    evals = [{'env_steps': '2500', 'seconds': '600.0', 'score_mean': '-19'}]
    marks = run_clock.mark_rows(rows, 2, evals)
    assert [mark for mark, _, _ in marks] == ['', '', '', '']
    assert marks[2][1:] == (pytest.approx(610.0), pytest.approx(610.0))
    assert run_clock.own_hours(rows, 2, evals)[-1] == pytest.approx(640 / 3600)
    assert run_clock.lost_share(rows, 2, evals) == (pytest.approx(0.0), 0.0)


def test_an_evaluation_after_its_row_counts_once_in_the_interval_it_ran_in():
    # Fast DQN logs the row at 2,000 steps, then evaluates for 300 s (eval.csv's wall_time is
    # the clock at the round's start, 20.0 here), then trains on: the 305 s interval after
    # that row holds the round. By env steps the round would be charged to the 10 s interval
    # before it (clamped to nothing) and the one after read as held, 300 s lost twice over.
    rows = _rows([(10, 2.0, 1.0, -21), (10, 2.0, 1.0, -20), (305, 2.0 * 5 / 305 + 0.03, 1.0,
                                                             -19), (10, 2.0, 1.0, -15)])
    rows[1]['wall_time'] = '20.0004'  # as printed: 6 significant digits of the clock
    evals = [{'env_steps': '2000', 'wall_time': '20.00045', 'seconds': '300.0'}]
    marks = run_clock.mark_rows(rows, 2, evals)
    assert [mark for mark, _, _ in marks] == ['', '', '', '']
    assert [own for _, _, own in marks] == [pytest.approx(value, abs=1e-3)
                                            for value in (10, 10, 305, 10)]
    assert run_clock.lost_share(rows, 2, evals) == (pytest.approx(0.0), 0.0)
    # A final round after the last row ran in no interval of training.
    final = [{'env_steps': '4000', 'wall_time': '336', 'seconds': '30.0'}]
    assert run_clock.own_hours(rows, 2, evals + final)[-1] == pytest.approx(335 / 3600)


def test_an_interval_starved_by_other_work_counts_its_share_of_the_usual_cpu():
    rows = _rows([(10, 2.0, 2.0, -21), (10, 2.0, 2.1, -20), (10, 1.0, 4.5, -18),
                  (10, 2.0, 2.0, -17)])
    marks = run_clock.mark_rows(rows, cores=2)
    assert [mark for mark, _, _ in marks] == ['', '', 'starved', '']
    assert marks[2][2] == pytest.approx(5.0)
    # The same load on a machine with 8 cores is not starvation: the run got less for itself.
    assert [mark for mark, _, _ in run_clock.mark_rows(rows, cores=8)] == ['', '', '', '']
    # Unknown cores: only holds are found.
    assert [mark for mark, _, _ in run_clock.mark_rows(rows, cores=None)] == ['', '', '', '']


def test_an_interval_whose_host_took_the_cpu_is_starved_though_the_load_is_low():
    """On a virtual machine the host's other guests take CPU time (steal) the load average does
    not count: the run's 2 threads stay runnable on 2 cores (load 2.0) while it gets 1.2."""
    rows = _rows([(10, 2.0, 2.0, -21), (10, 2.0, 2.0, -20), (10, 1.2, 2.0, -18),
                  (10, 2.0, 2.0, -17)])
    for row, steal in zip(rows, ('0.1', '0.0', '40.0', '')):
        row['steal_pct'] = steal
    marks = run_clock.mark_rows(rows, cores=2)
    assert [mark for mark, _, _ in marks] == ['', '', 'starved', '']
    assert marks[2][2] == pytest.approx(6.0)
    # A little steal beside the run's usual CPU is not starvation; nor is a low share alone.
    rows[2]['steal_pct'] = str(run_clock.STOLEN_PCT - 1)
    assert [mark for mark, _, _ in run_clock.mark_rows(rows, cores=2)] == ['', '', '', '']
    assert run_clock.steal_summary(rows) == (pytest.approx(0.1), pytest.approx(9.0))
    assert all(math.isnan(value) for value in run_clock.steal_summary(_rows([(10, 2, 2, 0)])))


def test_rows_without_load_columns_are_unknown_and_count_whole():
    rows = _rows([(10, None, None, -21), (20, None, None, -20)])
    assert [mark for mark, _, _ in run_clock.mark_rows(rows, 2)] == ['?', '?']
    assert run_clock.lost_share(rows, 2) == (0.0, 30.0)


def test_time_to_score_on_both_clocks():
    rows = _rows([(10, 2.0, 2.0, -21), (910, 0.02, 0.1, -16), (10, 2.0, 2.0, -14),
                  (10, 2.0, 2.0, 1.0)])
    reached = run_clock.time_to_scores(rows, 2, [-15, 0, 18])
    steps, wall, own = reached[-15]
    assert steps == 3000 and wall == pytest.approx(930 / 3600)
    assert own == pytest.approx((10 + 910 * 0.01 + 10) / 3600)
    assert reached[0][0] == 4000
    assert reached[18][0] is None and math.isnan(reached[18][1])


def test_the_cores_come_from_the_last_session_in_run_json(tmp_path):
    record = {'paper': 'paac', 'sessions': [
        {'machine': {'usable_cores': 8}}, run_record.session_record(app.PROJECT_ROOT)]}
    (tmp_path / app.RUN_FILE).write_text(json.dumps(record))
    assert run_clock.read_cores(str(tmp_path)) == record['sessions'][-1]['machine'][
        'usable_cores'] == len(os.sched_getaffinity(0))
    assert run_clock.read_cores(str(tmp_path / 'nowhere')) is None
    (tmp_path / app.RUN_FILE).write_text('{"paper": "paac"}')  # written before sessions existed
    assert run_clock.read_cores(str(tmp_path)) is None
