"""--stop_at_steps / --stop_at_score / --stop_at_minutes: a session ends at a step count, a
100-episode mean or the run's clock, at a boundary, saved, and the same command without the flag
resumes it to its total_steps."""
import io
import os
import subprocess
import sys

import common  # noqa: F401
import pytest
import tensorflow as tf

from common.launch import app
from common.run import runner
from common.run import session_stop
from common.run import tracker as tracker_lib
from common.system import errors
from common.tools import run_files


def test_reason_names_the_step_or_a_full_windows_mean():
    by_steps = session_stop.SessionStop(steps=300)
    assert by_steps.reason(299, [21.0] * 100) is None
    assert by_steps.reason(300, []) == 'reached --stop_at_steps=300'
    by_score = session_stop.SessionStop(score=18.0)
    assert by_score.reason(10**9, [21.0] * 99) is None  # not a full window yet
    assert by_score.reason(0, [17.0] * 50 + [19.0] * 50) == (
        'the 100-episode mean 18.00 reached --stop_at_score=18')
    assert by_score.reason(0, [17.0] * 51 + [19.0] * 49) is None  # 17.98
    by_minutes = session_stop.SessionStop(score=18.0, minutes=30)
    assert by_minutes.reason(0, [0.0] * 100, elapsed_seconds=1799.9) is None
    assert by_minutes.reason(0, [0.0] * 100, elapsed_seconds=1800.0) == (
        "the run's clock 30.0 min reached --stop_at_minutes=30")
    assert by_minutes.reason(0, [18.0] * 100, elapsed_seconds=60.0).endswith(
        '--stop_at_score=18')
    # Both at one boundary: the score is what the run reached.
    assert by_minutes.reason(0, [18.0] * 100, elapsed_seconds=1800.0).endswith(
        '--stop_at_score=18')


@pytest.mark.parametrize('settings, named', [
    (dict(steps=0), '--stop_at_steps=0'), (dict(steps=-5), '--stop_at_steps=-5'),
    (dict(steps=2.5), '--stop_at_steps=2.5'), (dict(score=float('nan')), '--stop_at_score=nan'),
    (dict(score=float('inf')), '--stop_at_score=inf'), (dict(minutes=0.0), '--stop_at_minutes=0'),
    (dict(minutes=-5.0), '--stop_at_minutes=-5'),
    (dict(minutes=float('nan')), '--stop_at_minutes=nan')])
def test_a_bad_value_is_a_config_error_naming_it(settings, named):
    with pytest.raises(errors.ConfigError, match=named.replace('.', r'\.')):
        session_stop.SessionStop(**settings)


class _Unit(runner.Unit):
    """10 steps and one episode (scoring score_of(episode)) per advance; a boundary only every
    third advance, as fast DQN's target periods."""

    def __init__(self, score_of):
        self.advances = 0
        self.score_of = score_of

    def advance(self, env_steps):
        self.advances += 1
        return 10, 1, [(self.score_of(self.advances), 5)]

    def updates(self):
        return self.advances

    def at_boundary(self):
        return self.advances % 3 == 0


def _tracker(run_dir, stop):
    return tracker_lib.RunTracker(run_dir, total_steps=10_000, log_every_seconds=3600.0,
                                  checkpoint_every_steps=100_000,
                                  trackables={'weights': tf.Variable(1.0)},
                                  stream=io.StringIO(), session_stop=stop)


def test_the_runner_stops_at_the_first_boundary_past_the_score_saved(tmp_path, capsys):
    run_dir = str(tmp_path)
    tracker = _tracker(run_dir, session_stop.SessionStop(score=10.0))
    # Episode k scores k / 10: the 100-episode mean of episodes 1-100 is 5.05; it first reaches
    # 10 at episode 150 (mean of 51..150 = 10.05), advance 150, which is a boundary.
    unit = _Unit(lambda k: k / 10)
    assert runner.train(tracker, io.StringIO, lambda _: unit) == 1500
    assert unit.advances == 150
    out = capsys.readouterr().out
    assert ('stopped at step 1,500: the 100-episode mean 10.05 reached --stop_at_score=10; saved'
            in out and 'rerun the same command to go on' in out)
    rows = run_files.read_csv(os.path.join(run_dir, 'metrics.csv'))
    assert int(rows[-1]['env_steps']) == 1500 and float(rows[-1]['score_mean_100']) == 10.05
    # Reached off a boundary (advance 148), the session ends at the next one (150).
    late = _tracker(str(tmp_path / 'late'), session_stop.SessionStop(score=10.0))
    shifted = _Unit(lambda k: (k + 2) / 10)  # the mean first reaches 10 at advance 148
    runner.train(late, io.StringIO, lambda _: shifted)
    assert shifted.advances == 150

    # Resumed without the flag, the run goes on from its checkpoint to total_steps.
    resumed = _tracker(run_dir, None)
    assert resumed.env_steps == 1500
    assert runner.train(resumed, io.StringIO, lambda _: _Unit(lambda k: 0.0)) == 10_000


def test_the_runner_stops_at_the_first_boundary_past_the_runs_clock_which_survives_a_resume(
        tmp_path, capsys):
    """The run's clock (metrics.csv's wall_time), not this session's: 20 s a step of 10 env
    steps here, a clock that a resumed run continues from its checkpoint."""
    run_dir = str(tmp_path)
    tracker = _tracker(run_dir, session_stop.SessionStop(minutes=1.0))

    def ticking(_):
        unit = _Unit(float)
        advance = unit.advance

        def advance_and_tick(env_steps):
            tracker.clock.elapsed_before += 20.0
            return advance(env_steps)
        unit.advance = advance_and_tick
        return unit
    # Past 60 s at advance 3 (a boundary): 30 steps.
    assert runner.train(tracker, io.StringIO, ticking) == 30
    assert "the run's clock 1.0 min reached --stop_at_minutes=1" in capsys.readouterr().out
    # Resumed with a budget of 2 minutes: its clock starts at the 60 s saved, so 3 advances more.
    tracker = _tracker(run_dir, session_stop.SessionStop(minutes=2.0))
    assert tracker.clock.elapsed() >= 60.0
    assert runner.train(tracker, io.StringIO, ticking) == 60


def test_a_run_already_past_its_stop_opens_no_session(tmp_path, capsys):
    run_dir = str(tmp_path)
    first = _tracker(run_dir, session_stop.SessionStop(steps=30))
    runner.train(first, io.StringIO, lambda _: _Unit(float))
    assert first.env_steps == 30
    opened = []
    again = _tracker(run_dir, session_stop.SessionStop(steps=20))
    assert runner.train(again, lambda: opened.append(1), None) == 30
    assert opened == []
    assert 'reached --stop_at_steps=20 at step 30 already: nothing to run' in \
        capsys.readouterr().out


CARTPOLE = ["PAACConfig.env_config = @GymConfig()", "GymConfig.env_id = 'CartPole-v1'",
            "PAACConfig.network = 'mlp'", 'PAACConfig.num_envs = 4', 'PAACConfig.num_workers = 1',
            'PAACConfig.total_steps = 20000', 'PAACConfig.checkpoint_every_steps = 100000',
            'PAACConfig.log_every_seconds = 30.0']


def _paac(tmp_path, *flags):
    command = [sys.executable, '-m', 'paac_tf.main',
               f"--gin_file={os.path.join(app.PROJECT_ROOT, 'gin/paac/paper.gin')}",
               f'--run_dir={tmp_path / "run"}'] + [f'--gin_bindings={b}' for b in CARTPOLE]
    return subprocess.run(command + list(flags), cwd=tmp_path, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT), timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize('flag, named', [('--stop_at_steps=0', '--stop_at_steps=0'),
                                         ('--stop_at_score=nan', '--stop_at_score=nan'),
                                         ('--stop_at_minutes=0', '--stop_at_minutes=0')])
def test_the_entry_point_refuses_a_bad_stop_before_anything_starts(tmp_path, flag, named,
                                                                   errors_in):
    result = _paac(tmp_path, flag)
    assert result.returncode == 2, result.stderr[-2000:]
    error_lines = errors_in(result.stderr)
    assert len(error_lines) == 1 and named in error_lines[0], result.stderr[-2000:]
    assert not (tmp_path / 'run').exists()


@pytest.mark.slow
def test_the_entry_point_stops_at_the_step_then_at_the_score_and_resumes(tmp_path):
    by_steps = _paac(tmp_path, '--stop_at_steps=200')
    assert by_steps.returncode == 0, by_steps.stderr[-3000:]
    assert 'stopped at step 200: reached --stop_at_steps=200' in by_steps.stdout
    assert os.path.exists(tmp_path / 'run' / 'checkpoints' / 'ckpt-200.index')
    # A random CartPole policy's episodes average about 20 steps: past 100 episodes, a full
    # window's mean is well above 5, so the resumed session ends there, not at total_steps.
    by_score = _paac(tmp_path, '--stop_at_score=5')
    assert by_score.returncode == 0, by_score.stderr[-3000:]
    assert 'resuming from' in by_score.stdout and 'reached --stop_at_score=5' in by_score.stdout
    rows = run_files.read_csv(tmp_path / 'run' / 'metrics.csv')
    episodes = run_files.read_csv(tmp_path / 'run' / 'episodes.csv')
    assert len(episodes) >= 100 and float(rows[-1]['score_mean_100']) >= 5
    assert 200 < int(rows[-1]['env_steps']) < 20000
    # The schedule ran over total_steps all along: one operative config, total_steps 20000.
    assert not [name for name in os.listdir(tmp_path / 'run') if 'resume-' in name]
