"""ga3c_tf.reproduce at a tiny scale: the annealer's trajectory, Figure 7's cells and Table 2's
rows with the paper's columns, a failing cell reported."""
import io

import pytest

from common.tools import speed_report
from ga3c_tf import bench_rows
from ga3c_tf import reproduce


@pytest.mark.slow
def test_the_annealer_moves_from_1_1_1_and_the_report_holds_its_profile(tmp_path):
    trajectory, row = reproduce.anneal(5.0, 2.0, 'pong', io.StringIO(), walk='one_knob')
    # Intervals of 2 s until 5 s have passed (starting agents can stretch one): 2 or 3.
    assert len(trajectory) >= 2 and trajectory[0][1:4] == (1, 1, 1)
    # The paper's walk's first proposal moves one knob up by one from the minimums.
    assert sorted(b - a for a, b in zip((1, 1, 1), trajectory[1][1:4])) == [0, 0, 1]
    assert trajectory[0][4] > 0  # it waited for training to run before judging TPS
    assert all(point[4] >= 0 for point in trajectory)
    experiment = reproduce.anneal_experiment(trajectory, row, str(tmp_path / 'a.png'),
                                             'one_knob', 2.0)
    assert experiment.differs.startswith("intervals of 2 s (the original code's step wait")
    assert "the paper's words (one knob" in experiment.differs
    assert '| prediction_wait_ms |' in experiment.table and '| 108 |' in experiment.table
    assert (tmp_path / 'a.png').exists()


@pytest.mark.slow
def test_figure_7_and_table_2_rows_keep_the_papers_columns_when_a_cell_fails(tmp_path,
                                                                            monkeypatch):
    tps, pps, lag = reproduce.min_batch_cell(5, 2.0, 'pong', num_agents=2)
    assert tps > 0 and pps > 0 and lag is not None and lag >= 0
    batches = {size: tuple(speed_report.Cell(what) for what in ('TPS', 'PPS', 'lag'))
               for size in (1, 5)}
    batches[1][0].error = 'RuntimeError: stuck'
    batches[5][0].values, batches[5][1].values, batches[5][2].values = [tps], [pps], [lag]
    figure_7 = reproduce.min_batch_experiment(batches, 2.0, str(tmp_path / 'm.png'))
    assert '| 1 | failed: RuntimeError: stuck |' in figure_7.table
    assert figure_7.table.splitlines()[3].startswith(f'| 5 | {tps:.1f} +- 0.0 |')

    monkeypatch.setattr(reproduce, 'PAPER_TABLE_2', {
        'small': reproduce.PAPER_TABLE_2['small'],
        'large, stride 1': reproduce.PAPER_TABLE_2['large, stride 1']})
    settings = {'game': 'pong', 'num_envs': 2, 'num_workers': 1, 'seconds': 0.5,
                'warmup_seconds': 0.0}
    cells = {}
    for name in reproduce.PAPER_TABLE_2:
        for algorithm, measure in (('a3c_cpu', bench_rows.a3c_cpu_pps),
                                   ('ga3c', bench_rows.ga3c_pps)):
            cell = cells[(name, algorithm)] = speed_report.Cell(f'{name} {algorithm}')
            if name == 'small':
                speed_report.measure(cell, lambda: measure(settings, [])['median'])
            else:
                speed_report.measure(cell, lambda: 1 / 0)
    table_2 = reproduce.table_2_experiment(cells, str(tmp_path / 't.png')).table.splitlines()
    assert table_2[2].startswith('| small |') and table_2[2].endswith('| 352 | 1361 | 4x |')
    assert 'failed: ZeroDivisionError' in table_2[3] and table_2[3].endswith('| 11 | 490 | 45x |')
    assert (tmp_path / 't.png').exists() and (tmp_path / 'm.png').exists()
