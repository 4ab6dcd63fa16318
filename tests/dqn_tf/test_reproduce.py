"""dqn_tf.reproduce at a tiny scale: the report's tables carry the paper's columns, a failing cell
is reported in its row and the others are measured."""
import io

import pytest

from dqn_tf import reproduce
from dqn_tf import speedtest


@pytest.mark.slow
def test_tiny_reproduction_writes_both_experiments_and_reports_a_failed_cell(tmp_path,
                                                                              monkeypatch):
    monkeypatch.setattr(reproduce, 'CELLS', (('standard', 1), ('both', 2)))
    monkeypatch.setattr(reproduce, 'ACTOR_COUNTS', (1, 2))
    real_session = speedtest.Session
    dtypes = []

    def session(config, warm_up=True):
        if warm_up:
            dtypes.append(config.compute_dtype)
        if config.mode == 'both' and warm_up:  # Table 1's both W=2 cell fails
            raise RuntimeError('device lost')
        return real_session(config, warm_up)

    monkeypatch.setattr(speedtest, 'Session', session)
    stream = io.StringIO()
    by_dtype = reproduce.measure_tables(16, 2, 'pong', 32, 'thread', stream,
                                        ('float32', 'bfloat16'))
    # the dtypes alternate within each round; a failed cell is not tried again
    assert dtypes == ['float32', 'float32', 'bfloat16', 'bfloat16', 'float32', 'bfloat16']
    cells, learner = by_dtype['float32']
    assert len(cells[('standard', 1)].values) == 2 and len(learner.values) == 2
    assert cells[('both', 2)].error == 'RuntimeError: device lost'
    bf16_cells, bf16_learner = by_dtype['bfloat16']
    assert len(bf16_cells[('standard', 1)].values) == 2 and len(bf16_learner.values) == 2
    assert bf16_cells[('standard', 1)].label == 'standard W=1 (bfloat16)'
    bf16 = reproduce.tables_experiment(bf16_cells, bf16_learner, 16, 2, str(tmp_path / 'b.png'),
                                       'bfloat16')
    assert bf16.title.endswith('(bfloat16)') and 'compute in bfloat16' in bf16.differs
    assert bf16.figure == 'b.png' and (tmp_path / 'b.png').exists()
    actors = reproduce.measure_actors(16, 2, 'pong', 32, stream)
    assert set(actors) == {(count, where) for count in (1, 2)
                             for where in ('thread', 'process', 'vector')}
    assert all(len(cell.values) == 2 and min(cell.values) > 0 for cell in actors.values())
    tables = reproduce.tables_experiment(cells, learner, 16, 2, str(tmp_path / 't.png'))
    rows = tables.table.splitlines()
    assert rows[2].startswith('| standard | 1 |') and '| 25.08 +- 0.52 |' in rows[2]
    assert '| 100.0% | 100.0% | 1.00x | 1.00x |' in rows[2]
    assert rows[3].startswith('| both | 2 | failed: RuntimeError: device lost |')
    assert '14.72' in rows[3] and '1.70x' in rows[3]  # the paper's column stays filled
    assert 'Learner-only bound' in tables.notes
    actor_rows = reproduce.actors_experiment(actors, 16, str(tmp_path / 's.png'))
    by_place = {tuple(row.split(' | ')[:2]): row for row in actor_rows.table.splitlines()[2:]}
    for where in ('thread', 'process', 'vector'):  # each W against the W=1 of its own place
        assert by_place[('| 1', where)].endswith('| 1.00x |')
        ratio = actors[(2, where)].mean / actors[(1, where)].mean
        assert by_place[('| 2', where)].endswith(f'| {ratio:.2f}x |')
    assert (tmp_path / 't.png').exists() and (tmp_path / 's.png').exists()
