"""common/tools/child_runs.py: each output line of a child handed on (a failing handler dropped,
the run going on), and a run that ended at its --stop_at_score or --stop_at_minutes told apart
from one that ended short, from its files alone."""
import io

import pytest

from common.run import session_stop
from common.system import errors
from common.tools import child_runs


class FakeChild:
    def __init__(self, text):
        self.stdout = io.StringIO(text)

    def wait(self):
        return 0


def test_child_runs_train_hands_each_child_line_to_on_line(monkeypatch, capsys):
    monkeypatch.setattr(child_runs.subprocess, 'Popen',
                        lambda *args, **kwargs: FakeChild('first\nsecond\n'))
    seen = []
    status = child_runs.train('paac', ['p.gin'], [], 'run', 10, '[t]', on_line=seen.append)
    assert status == 0 and seen == ['first\n', 'second\n']
    assert capsys.readouterr().out == '[t] first\n[t] second\n'


def test_a_failing_line_handler_is_dropped_and_the_run_goes_on(monkeypatch, capsys):
    calls = []

    def broken(line):
        calls.append(line)
        raise ValueError('cannot read')

    monkeypatch.setattr(child_runs.subprocess, 'Popen',
                        lambda *args, **kwargs: FakeChild('first\nsecond\n'))
    assert child_runs.train('paac', ['p.gin'], [], 'run', 10, '[t]', on_line=broken) == 0
    assert calls == ['first\n']
    assert capsys.readouterr().out == ("[t] first\n[t] stopped watching the output lines "
                                       "(ValueError('cannot read'))\n[t] second\n")


def _run_files(run_dir, scores, wall_times):
    """episodes.csv with scores at steps 10, 20, ...; metrics.csv rows at steps 100, 200, ...
    with wall_times; one more episode and one more row past the checkpoint (step 10,000)."""
    (run_dir / 'episodes.csv').write_text('wall_time,env_steps,score,length\n' + ''.join(
        f'1.0,{10 * (index + 1)},{score},10\n' for index, score in enumerate(scores))
        + '9.0,10000,-50.0,10\n')
    (run_dir / 'metrics.csv').write_text('wall_time,env_steps,score_mean_100\n' + ''.join(
        f'{wall},{100 * (index + 1)},\n' for index, wall in enumerate(wall_times))
        + '99999.0,10000,\n')


def test_a_run_saved_at_its_score_or_its_minutes_has_reached_its_stop(tmp_path):
    _run_files(tmp_path, [10.0] * 50 + [20.0] * 100, [60.0, 1795.0])
    by_score = session_stop.SessionStop(score=18)
    assert child_runs.stop_reached(tmp_path, by_score, 1500) == (
        'the 100-episode mean 20.00 reached --stop_at_score=18')
    # At step 1000 the last 100 episodes are 50 of 10 and 50 of 20: mean 15.
    assert child_runs.stop_reached(tmp_path, by_score, 1000) is None
    by_minutes = session_stop.SessionStop(minutes=30)
    assert child_runs.stop_reached(tmp_path, by_minutes, 200) is None  # 1795 s < 30 min
    _run_files(tmp_path, [10.0] * 10, [60.0, 1800.0])
    assert child_runs.stop_reached(tmp_path, by_minutes, 200) == (
        "the run's clock 30.0 min reached --stop_at_minutes=30")
    assert child_runs.stop_reached(tmp_path, by_score, 100) is None  # 10 episodes: no window
    assert child_runs.stop_reached(tmp_path, None, 200) is None
    assert child_runs.stop_reached(tmp_path, by_minutes, 0) is None  # nothing saved


def test_a_stop_becomes_the_entry_points_flags():
    assert child_runs.stop_flags(None) == []
    assert child_runs.stop_flags(session_stop.SessionStop(score=18, minutes=30)) == [
        '--stop_at_score=18', '--stop_at_minutes=30']
    assert child_runs.stop_flags(session_stop.SessionStop(minutes=0.5)) == [
        '--stop_at_minutes=0.5']
    # Every digit: a score the child rounded below the sweep's would never count as reached.
    assert child_runs.stop_flags(session_stop.SessionStop(score=18.1234549)) == [
        '--stop_at_score=18.1234549']


def test_a_clock_saved_after_the_last_row_counts(tmp_path, monkeypatch):
    """A session interrupted between rows saves its clock later than its last row's: the rerun's
    own check reads the checkpoint's, and so does stop_reached."""
    _run_files(tmp_path, [10.0] * 10, [60.0, 1795.0])
    monkeypatch.setattr(child_runs, 'saved_seconds', lambda run_dir: 1805.0)
    assert child_runs.stop_reached(tmp_path, session_stop.SessionStop(minutes=30), 200) == (
        "the run's clock 30.1 min reached --stop_at_minutes=30")


def test_a_run_stopped_short_of_its_steps_ends_well_only_at_its_stop(monkeypatch):
    monkeypatch.setattr(child_runs, 'train', lambda *args: 0)
    monkeypatch.setattr(child_runs, 'checkpoint_steps', lambda run_dir: 500)
    stop = session_stop.SessionStop(score=18)
    monkeypatch.setattr(child_runs, 'stop_reached', lambda run_dir, given, steps: 'reached')
    place = ('point', 1, 5, 'seed-0')
    assert child_runs.train_in_turn('accel', ['p.gin'], [], 'run', 1000, '[t]', place,
                                    stop=stop) == 500
    monkeypatch.setattr(child_runs, 'stop_reached', lambda run_dir, given, steps: None)
    with pytest.raises(errors.RunError, match='ended with exit status 0 at 500 steps'):
        child_runs.train_in_turn('accel', ['p.gin'], [], 'run', 1000, '[t]', place, stop=stop)


@pytest.mark.parametrize('saved, said', [
    (1_324_000, '(battle_zone; its checkpoint at step 1,324,000 saved)'),
    (0, '(battle_zone; stopped before its first checkpoint, nothing of it to keep)')])
def test_a_ctrl_c_names_the_checkpoint_it_kept_or_that_there_is_none(monkeypatch, capsys,
                                                                      saved, said):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(child_runs, 'train', interrupted)
    monkeypatch.setattr(child_runs, 'checkpoint_steps', lambda run_dir: saved)
    with pytest.raises(KeyboardInterrupt):
        child_runs.train_in_turn('paac', ['p.gin'], [], 'run', 1000, '[3/5 battle_zone]',
                                 ('game', 3, 5, 'battle_zone'))
    assert capsys.readouterr().err == (f'[3/5 battle_zone] interrupted in game 3 of 5 {said}: '
                                       'rerun the same command to resume\n')
