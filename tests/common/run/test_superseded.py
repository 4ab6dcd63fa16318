"""superseded: the rows a resumed run will log again set aside (nothing lost), and one history
read from files written before that."""
import csv
import os

from common.run import superseded


def _write(path, rows):
    with open(path, 'w', newline='') as f:
        csv.writer(f).writerows(rows)


def _read(path):
    with open(path, newline='') as f:
        return list(csv.reader(f))


def test_rows_past_the_checkpoint_move_to_the_superseded_file(tmp_path):
    header = ['wall_time', 'env_steps', 'score']
    _write(tmp_path / 'episodes.csv', [header, ['1', '10', '-21'], ['2', '20', '-20'],
                                       ['3', '', '-19'], ['4', '30', '-18'], ['5', '40', '-17']])
    _write(tmp_path / 'metrics.csv', [header, ['1', '20', '-20']])
    moved = superseded.set_aside_rows_after(str(tmp_path), 20)
    assert moved == {'episodes.csv': 2}
    # Kept in order, a row without a step included; the superseded ones under the same header.
    assert _read(tmp_path / 'episodes.csv') == [header, ['1', '10', '-21'], ['2', '20', '-20'],
                                                ['3', '', '-19']]
    assert _read(tmp_path / 'episodes.superseded.csv') == [header, ['4', '30', '-18'],
                                                           ['5', '40', '-17']]
    assert _read(tmp_path / 'metrics.csv') == [header, ['1', '20', '-20']]
    assert not os.path.exists(tmp_path / 'metrics.superseded.csv')
    assert not os.path.exists(tmp_path / 'eval.csv')
    # A second resume further back appends to what was set aside before.
    assert superseded.set_aside_rows_after(str(tmp_path), 10) == {'episodes.csv': 1,
                                                                  'metrics.csv': 1}
    assert _read(tmp_path / 'episodes.superseded.csv')[1:] == [['4', '30', '-18'],
                                                               ['5', '40', '-17'],
                                                               ['2', '20', '-20']]
    assert _read(tmp_path / 'metrics.csv') == [header]
    assert sorted(os.listdir(tmp_path)) == ['episodes.csv', 'episodes.superseded.csv',
                                            'metrics.csv', 'metrics.superseded.csv']


def test_a_file_without_a_step_column_is_left_alone(tmp_path):
    rows = [['a', 'b'], ['1', '99']]
    _write(tmp_path / 'eval.csv', rows)
    assert superseded.set_aside_rows_after(str(tmp_path), 0) == {}
    assert _read(tmp_path / 'eval.csv') == rows


def test_resumed_history_drops_the_rows_a_resume_logged_again():
    steps = [10, 20, 30, 40, 25, 35, 50]  # resumed at 20: 30 and 40 were logged again
    rows = [{'env_steps': str(step)} for step in steps]
    assert [int(row['env_steps']) for row in superseded.resumed_history(rows)] == [10, 20, 25,
                                                                                   35, 50]


def test_read_history_is_one_history_cut_at_the_restored_step(tmp_path):
    header = ['env_steps', 'score']
    # Resumed at 20 without setting aside: 30 and 40 were lived through again as 25 and 35.
    _write(tmp_path / 'episodes.csv', [header, ['10', '1'], ['20', '2'], ['30', '3'],
                                       ['40', '4'], ['25', '5'], ['35', '6']])
    rows = superseded.read_history(str(tmp_path / 'episodes.csv'), upto=30)
    assert [(row['env_steps'], row['score']) for row in rows] == [('10', '1'), ('20', '2'),
                                                                  ('25', '5')]
    assert superseded.read_history(str(tmp_path / 'missing.csv')) == []


def test_progress_without_checkpoint_names_what_a_checkpoint_should_have_kept(tmp_path):
    def rows(*lines):
        (tmp_path / 'metrics.csv').write_text('wall_time,env_steps,session_start\n' + ''.join(
            f'{index},{steps},{start}\n' for index, (steps, start) in enumerate(lines)))

    assert superseded.progress_without_checkpoint(str(tmp_path), 100) is None  # no rows
    rows((10, 'new'), (100, ''))  # killed before its first checkpoint, due at 100
    assert superseded.progress_without_checkpoint(str(tmp_path), 100) is None
    rows((10, 'new'), (101, ''))
    assert superseded.progress_without_checkpoint(str(tmp_path), 100) == (
        'rows to step 101, past the checkpoint due at 100')
    assert superseded.progress_without_checkpoint(str(tmp_path)) is None  # interval unknown
    rows((10, 'new'), (20, 'resumed'))
    assert superseded.progress_without_checkpoint(str(tmp_path), 100) == (
        'a session resumed from a checkpoint, rows to step 20')
    (tmp_path / 'metrics.csv').unlink()
    (tmp_path / 'episodes.csv').write_text('env_steps,score\n5000,1.0\n')
    assert superseded.progress_without_checkpoint(str(tmp_path), 100) == (
        'rows to step 5,000, past the checkpoint due at 100')
