"""paac_tf.reproduce at a tiny scale: Figure 2's table and shares, a failing cell reported."""
import io

import pytest

from paac_tf import reproduce


@pytest.mark.slow
def test_tiny_figure_2_measures_shares_and_reports_a_failed_cell(tmp_path, monkeypatch,
                                                                 fail_cell):
    monkeypatch.setattr(reproduce, 'NUM_ENVS', (16, 32))
    fail_cell(reproduce, 'measure_cell', ('nature', 16), RuntimeError('out of memory'))
    rates, shares = reproduce.measure(0.3, 2, 1, 'pong', io.StringIO())
    assert rates[('nature', 16)].error == 'RuntimeError: out of memory'
    for key in (('nips', 16), ('nips', 32), ('nature', 32)):
        assert len(rates[key].values) == 2 and min(rates[key].values) > 0
        total = sum(shares[key + (part,)].mean for part in reproduce.PARTS)
        assert 0.5 < total <= 1.01  # the synchronized sampler's parts do not overlap
    experiment = reproduce.figure_experiment(rates, shares, 0.3, 2, str(tmp_path / 'f.png'))
    rows = experiment.table.splitlines()[2:]
    assert rows[0].startswith('| archnips | 16 |') and rows[0].endswith('| drawn only |')
    assert rows[1].endswith('| env ~50%, learn + act 37% |')
    assert rows[2].startswith('| archnature | 16 | failed: RuntimeError: out of memory |')
    nature_32 = rows[3].split(' | ')
    assert nature_32[-1] == 'GPU -22%, CPU -41% (ne = 32) |'
    assert nature_32[-2].endswith('%') and nature_32[-2][0] in '+-'
    assert (tmp_path / 'f.png').stat().st_size > 1000
