"""speed_report: a cell's mean and spread, a failing trial ending only its cell, the report file."""
import io
import math
import os

import pytest

from common.tools import speed_report


def test_a_cell_summarizes_its_trials():
    cell = speed_report.Cell('both W=8', values=[2.0, 4.0, 6.0])
    assert cell.mean == 4.0 and cell.std == 2.0 and cell.spread == 0.5
    one = speed_report.Cell('one', values=[3.0])
    assert one.std == 0.0 and one.spread == 0.0
    assert math.isnan(speed_report.Cell('none').mean)


def test_a_failing_trial_ends_its_cell_with_one_line_and_later_trials_are_skipped():
    cell, calls, stream = speed_report.Cell('standard W=1'), [], io.StringIO()

    def trial():
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError('emulator crashed\ntraceback lines')
        return 1.5

    for _ in range(4):
        speed_report.measure(cell, trial, stream)
    assert cell.values == [1.5] and len(calls) == 2
    assert cell.error == 'RuntimeError: emulator crashed'
    assert stream.getvalue() == 'standard W=1: failed (RuntimeError: emulator crashed)\n'


def test_the_report_holds_each_experiment_with_its_table_note_and_figure(tmp_path):
    figure = tmp_path / 'out' / 'bars.png'
    os.makedirs(figure.parent)
    speed_report.grouped_bars(str(figure), ['a', 'b'], [('ours', [1.0, float('nan')]),
                                                        ('paper', [2.0, 3.0])], 'x', 'title')
    assert figure.stat().st_size > 1000
    stacked = tmp_path / 'out' / 'stacked.png'
    speed_report.stacked_bars(str(stacked), ['a', 'b'], [('env', [0.5, 0.4]),
                                                         ('learn', [0.5, float('nan')])], 'y', 't')
    assert stacked.stat().st_size > 1000
    table = speed_report.markdown_table(['cell', 'ours', 'paper'], [['a', 1, 2]])
    assert table.splitlines() == ['| cell | ours | paper |', '|---|---|---|', '| a | 1 | 2 |']
    path = speed_report.write_report(
        str(tmp_path / 'out' / 'paper.md'), 'A paper', 'python -m x.reproduce',
        [speed_report.Experiment('Table 9', 'shorter runs', table, 'bars.png', 'a note')], 1.25)
    text = open(path).read()
    assert text.startswith('# A paper: speed experiments reproduced')
    assert '`python -m x.reproduce`' in text and 'in 1.2 min' in text
    assert 'usable CPU cores' in text
    for part in ('## Table 9', 'How ours differs: shorter runs', table, 'a note',
                 '![Table 9](bars.png)'):
        assert part in text


def test_a_written_report_reads_back_as_its_tables_rows(tmp_path):
    first = speed_report.markdown_table(['cell', 'ours', 'paper'], [['a', '1,234 +- 5', 2],
                                                                    ['b', 'failed: x', '']])
    second = speed_report.markdown_table(['W', 'steps/s'], [[1, 10]])
    path = speed_report.write_report(
        str(tmp_path / 'paper.md'), 'A paper', 'python -m x.reproduce',
        [speed_report.Experiment('Table 1: one', 'shorter', first, None,
                                 speed_report.markdown_table(['x', 'y'], [[3, 4]])),
         speed_report.Experiment('Figure 2', 'fewer cores', second, 'f.png')], 1.0)
    assert speed_report.read_tables(path) == {
        'Table 1: one': [{'cell': 'a', 'ours': '1,234 +- 5', 'paper': '2'},
                         {'cell': 'b', 'ours': 'failed: x', 'paper': ''}],
        'Table 1: one #2': [{'x': '3', 'y': '4'}],
        'Figure 2': [{'W': '1', 'steps/s': '10'}]}


@pytest.mark.parametrize('values', [[], [1.0, 1.0]])
def test_spread_is_nan_without_trials_and_zero_when_they_agree(values):
    spread = speed_report.Cell('c', values=values).spread
    assert (math.isnan(spread) if not values else spread == 0.0)


def test_a_command_report_names_its_command_with_the_flags_given(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr('sys.argv', ['reproduce.py', '--trials=2'])
    path = str(tmp_path / 'p.md')
    speed_report.write_command_report(path, 'P', 'p_tf.reproduce', [], start=0.0)
    assert '`python -m p_tf.reproduce --trials=2`' in open(path).read()
    assert capsys.readouterr().out == f'wrote {path}\n'


def test_round_robin_measures_every_cell_once_per_round_and_goes_on_past_a_failure():
    order = []

    def trial(key):
        order.append(key)
        if key == 'b':
            raise ValueError('no device')
        return 10.0 * len(order)

    cells = {key: speed_report.Cell(key) for key in 'abc'}
    stream = io.StringIO()
    speed_report.measure_round_robin(cells, trial, 2, stream, 'frames/s')
    assert order == ['a', 'b', 'c', 'a', 'c']  # b is skipped once it failed
    assert cells['a'].values == [10.0, 40.0] and cells['c'].values == [30.0, 50.0]
    assert cells['b'].error == 'ValueError: no device'
    assert 'a: 10 frames/s' in stream.getvalue()
