"""accel_tf.reproduce at a tiny scale: Figure 1b's and Table 3's tables, a failed cell reported,
a failing paired sampler ending both threads."""
import io
import threading

import pytest

from accel_tf import reproduce
from common.units import samplers


@pytest.mark.slow
def test_tiny_figure_1b_and_table_3_fill_the_paper_columns_and_report_a_failed_cell(
        tmp_path, monkeypatch, fail_cell):
    monkeypatch.setattr(reproduce, 'SIMULATORS_PER_CORE', (2,))
    monkeypatch.setattr(reproduce, 'SAMPLERS', ('alternating',))  # a worker per group and core
    fail_cell(reproduce, 'measure_figure_cell', ('env-only', 2), RuntimeError('worker lost'))
    stream = io.StringIO()
    figure_cells = reproduce.measure_figure('pong', 0.3, 0.1, 2, stream)
    assert figure_cells[('env-only', 2, 2)].error == 'RuntimeError: worker lost'
    for key in (('alternating', 1, 2), ('alternating', 2, 2), ('env-only', 1, 2)):
        assert len(figure_cells[key].values) == 2 and min(figure_cells[key].values) > 0
    figure = reproduce.figure_experiment(figure_cells, 'pong', 0.3, 2, str(tmp_path / 'f.png'))
    rows = {tuple(row.split(' | ')[:2]): row.split(' | ') for row in figure.table.splitlines()[2:]}
    assert rows[('| alternating', '2')][4:6] == ['failed: RuntimeError: worker lost', '']
    alternating = figure_cells[('alternating', 1, 2)].mean
    free = figure_cells[('env-only', 1, 2)].mean
    assert rows[('| alternating', '1')][5:] == [f'{alternating / free:.2f}', 'drawn only |']
    assert (tmp_path / 'f.png').stat().st_size > 1000

    table_cells = reproduce.measure_table('pong', 0.3, 0.1, 2, stream)
    assert all(len(cell.values) == 2 and min(cell.values) > 0 for cell in table_cells.values())
    table = reproduce.table_experiment(table_cells, 0.3, 2).table
    row = table.splitlines()[2]
    ratio = table_cells[(2, True)].mean / table_cells[(2, False)].mean
    assert row.startswith('| 4 (2) |') and f'| {ratio:.2f} | 64 (2) | 29.6 | 31.9 | 0.93 |' in row


class _FailingSampler:
    """Collects by the real sampler, then raises on its third collect."""

    def __init__(self, real):
        self.real, self.calls = real, 0

    def collect(self, policy):
        self.calls += 1
        if self.calls == 3:
            raise RuntimeError('simulator crashed')
        return self.real.collect(policy)


@pytest.mark.slow
@pytest.mark.parametrize('synchronized', [True, False])
def test_a_failing_paired_sampler_ends_both_threads_and_raises(monkeypatch, synchronized):
    real_make = samplers.make_sampler
    made = []

    def make(kind, pool, horizon):
        made.append(_FailingSampler(real_make(kind, pool, horizon)) if not made
                    else real_make(kind, pool, horizon))
        return made[-1]

    monkeypatch.setattr(samplers, 'make_sampler', make)
    before = threading.active_count()
    with pytest.raises(RuntimeError, match='simulator crashed'):
        reproduce.measure_paired(2, synchronized, 'pong', 5.0, 5.0)
    assert threading.active_count() == before
