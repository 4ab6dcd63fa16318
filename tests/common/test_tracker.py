"""RunTracker: CSV rows, episodes, checkpoints and resume (counters restored, CSVs appended)."""
import contextlib
import io
import os

import common  # noqa: F401
import pytest
import tensorflow as tf

from common.run import app
from common.run import metrics
from common.run import processes
from common.run import tracker as tracker_lib
from common.tools import run_files


def _make(run_dir, variable):
    return tracker_lib.RunTracker(run_dir, total_steps=100, log_every_seconds=1e-6,
                                  checkpoint_every_steps=30, extra_columns=('loss',),
                                  frames_per_step=4, trackables={'weights': variable},
                                  stream=io.StringIO())


def test_tracker_writes_rows_checkpoints_and_resumes(tmp_path):
    run_dir = str(tmp_path)
    variable = tf.Variable(1.0)
    tracker = _make(run_dir, variable)
    assert tracker.restored_from is None
    for _ in range(4):
        tracker.add_steps(10, updates=1)
        tracker.add_episodes([(21.0, 800)])
        tracker.log_interval(updates=1, extra={'loss': 0.5})
        tracker.maybe_checkpoint()
    variable.assign(7.0)
    tracker.save()
    tracker.close()

    rows = run_files.read_csv(os.path.join(run_dir, 'metrics.csv'))
    assert [int(row['env_steps']) for row in rows] == [10, 20, 30, 40]
    assert [int(row['frames']) for row in rows] == [40, 80, 120, 160]
    assert rows[-1]['loss'] == '0.5' and rows[-1]['score_mean_100'] == '21'
    # What the run got of the machine, on every row.
    assert all(float(row['load_1m']) >= 0 and float(row['run_cpu_cores']) >= 0 for row in rows)
    assert len(run_files.read_csv(os.path.join(run_dir, 'episodes.csv'))) == 4
    assert any(name.startswith('events.') for name in os.listdir(run_dir))

    restored_variable = tf.Variable(0.0)
    resumed = _make(run_dir, restored_variable)
    assert resumed.restored_from is not None
    assert resumed.env_steps == 40 and resumed.episodes == 4
    assert float(restored_variable.numpy()) == 7.0
    assert resumed.clock.elapsed() >= tracker.clock.elapsed_before
    resumed.add_steps(10)
    resumed.log_interval(updates=5)
    resumed.close()
    rows = run_files.read_csv(os.path.join(run_dir, 'metrics.csv'))
    assert [int(row['env_steps']) for row in rows] == [10, 20, 30, 40, 50]


def test_progress_line_shows_rate_score_and_eta():
    logger_line = metrics.RunLogger.progress_line
    fake = type('Fake', (), {'total_steps': 1000})()
    line = logger_line(fake, {'env_steps': 500, 'steps_per_sec': 100.0, 'score_mean_100': -20.5,
                              'episodes': 3, 'wall_time': 3725.0})
    assert 'steps 500/1000' in line and '100 steps/s' in line and '-20.5' in line
    assert 'elapsed 1:02:05' in line and 'ETA 0:00:05' in line
    past_the_end = logger_line(fake, {'env_steps': 1010, 'steps_per_sec': 100.0,
                                      'score_mean_100': 1.0, 'episodes': 3, 'wall_time': 5.0})
    assert 'ETA 0:00:00' in past_the_end


def test_csv_with_other_columns_is_refused_not_overwritten(tmp_path):
    path = tmp_path / 'metrics.csv'
    path.write_text('a,b\n1,2\n')
    try:
        metrics.RunLogger(str(tmp_path), extra_columns=('loss',), tensorboard=False,
                          stream=io.StringIO())
    except ValueError as error:
        assert 'columns' in str(error)
    else:
        raise AssertionError('expected ValueError')
    assert path.read_text() == 'a,b\n1,2\n'


def test_resume_reloads_the_recent_scores(tmp_path):
    run_dir = str(tmp_path)
    first = _make(run_dir, tf.Variable(1.0))
    first.add_steps(10)
    first.add_episodes([(-21.0, 900), (-19.0, 950)])
    first.save()
    first.add_steps(10)
    first.add_episodes([(5.0, 100)])  # after the checkpoint: not part of the resumed run
    first.close()
    resumed = _make(run_dir, tf.Variable(0.0))
    assert resumed.episode_stats.mean_score == -20.0
    assert resumed.episodes == 2
    # The episode past the checkpoint is set aside, so a later resume, past its step, does not
    # count it in the window either.
    assert resumed.superseded_rows == {'episodes.csv': 1}
    assert [row['score'] for row in run_files.read_csv(
        os.path.join(run_dir, 'episodes.superseded.csv'))] == ['5']
    resumed.add_steps(20)
    resumed.add_episodes([(-15.0, 800)])
    resumed.save()
    resumed.close()
    again = _make(run_dir, tf.Variable(0.0))
    assert again.env_steps == 30 and again.superseded_rows == {}
    assert again.episode_stats.mean_score == -55.0 / 3
    again.close()


def test_a_resume_sets_aside_the_rows_logged_after_its_checkpoint(tmp_path, capsys):
    run_dir = str(tmp_path)
    first = _make(run_dir, tf.Variable(1.0))
    first.add_steps(30)  # a checkpoint is due at 30
    first.log_interval(updates=1, extra={'loss': 1.0})
    first.save()
    first.add_steps(20)
    first.log_interval(updates=2, extra={'loss': 2.0})  # killed before the next checkpoint
    first.close()
    resumed = _make(run_dir, tf.Variable(0.0))
    tracker_lib.run_training(resumed, contextlib.nullcontext, lambda runner: None)
    assert 'resuming from' in capsys.readouterr().out
    rows = run_files.read_csv(os.path.join(run_dir, 'metrics.csv'))
    assert [int(row['env_steps']) for row in rows] == [30]
    (aside,) = run_files.read_csv(os.path.join(run_dir, 'metrics.superseded.csv'))
    assert int(aside['env_steps']) == 50 and float(aside['loss']) == 2.0


class _Runner:
    """A context manager that records, when it closes, whether a checkpoint was there."""

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.checkpoint_when_closed = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.checkpoint_when_closed = bool(os.listdir(os.path.join(self.run_dir, 'checkpoints')))


def _interrupt_inside_a_c_callback():
    """What Ctrl-C raises when it lands while TensorFlow converts a numpy array: CPython turns
    the KeyboardInterrupt set inside the callback into a SystemError caused by it."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as interrupt:
        raise SystemError('__array__ returned a result with an exception set') from interrupt


def _interrupt_in_python():
    raise KeyboardInterrupt


@pytest.mark.parametrize('interrupt', [_interrupt_in_python, _interrupt_inside_a_c_callback])
def test_run_training_saves_on_ctrl_c_before_the_runner_closes(tmp_path, capsys, interrupt):
    run_dir = str(tmp_path)
    tracker = _make(run_dir, tf.Variable(1.0))
    runner = _Runner(run_dir)

    def loop(_):
        tracker.add_steps(12)
        interrupt()

    try:
        tracker_lib.run_training(tracker, lambda: runner, loop)
        raise AssertionError('the interrupt must go on to the entry point')
    except KeyboardInterrupt:
        pass
    assert runner.checkpoint_when_closed is True
    assert 'interrupted at step 12; saved' in capsys.readouterr().out
    assert tracker.logger.metrics._file.closed  # pylint: disable=protected-access
    resumed = _make(run_dir, tf.Variable(0.0))
    assert resumed.env_steps == 12
    resumed.close()


def test_run_training_lets_an_error_not_caused_by_ctrl_c_through_unsaved(tmp_path):
    run_dir = str(tmp_path)
    tracker = _make(run_dir, tf.Variable(1.0))

    def loop(_):
        raise SystemError('a real failure')

    with pytest.raises(SystemError, match='a real failure'):
        tracker_lib.run_training(tracker, contextlib.nullcontext, loop)
    checkpoints = os.path.join(run_dir, 'checkpoints')
    assert not os.path.exists(checkpoints) or not os.listdir(checkpoints)


def test_run_training_resumes_runs_to_the_end_and_stops_when_complete(tmp_path, capsys):
    run_dir = str(tmp_path)
    tracker = _make(run_dir, tf.Variable(1.0))
    tracker.add_steps(40)
    tracker.save()
    tracker.close()

    opened = []
    resumed = _make(run_dir, tf.Variable(0.0))

    def loop(runner):
        opened.append(runner)
        while not resumed.done:
            resumed.add_steps(30)

    assert tracker_lib.run_training(resumed, lambda: _Runner(run_dir), loop,
                                    resume_note=' (note)') == 100
    out = capsys.readouterr().out
    assert 'resuming from' in out and 'at step 40 (note)' in out and len(opened) == 1
    complete = _make(run_dir, tf.Variable(0.0))
    assert complete.env_steps == 100
    assert tracker_lib.run_training(complete, lambda: _Runner(run_dir), loop) == 100
    assert 'run already complete: 100 >= total_steps 100' in capsys.readouterr().out
    assert len(opened) == 1  # a complete run opens no runner


def test_frames_per_step_is_the_frame_skip_or_one():
    class Atari:
        frame_skip = 4

    assert tracker_lib.frames_per_step(Atari()) == 4
    assert tracker_lib.frames_per_step(object()) == 1


def test_a_dead_worker_ends_the_run_with_one_line_and_a_checkpoint(tmp_path):
    """Every paper's worker deaths (pool workers, GA3C agents, DQN samplers) are
    processes.WorkerDiedError: the learner's state at that step is saved, then app.RunError."""
    run_dir = str(tmp_path)
    variable = tf.Variable(1.0)
    tracker = _make(run_dir, variable)
    runner = _Runner(run_dir)

    def loop(_):
        tracker.add_steps(17)
        variable.assign(5.0)
        raise processes.WorkerDiedError('ProcessPool worker 3 (pid 99) was killed by signal SIGKILL\n'
                                    'second line')

    with pytest.raises(app.RunError) as raised:
        tracker_lib.run_training(tracker, lambda: runner, loop)
    message = str(raised.value)
    assert '\n' not in message and 'worker 3 (pid 99) was killed' in message
    assert 'run stopped at step 17, saved' in message and 'ckpt-17' in message
    assert runner.checkpoint_when_closed is True
    restored = tf.Variable(0.0)
    resumed = _make(run_dir, restored)
    assert resumed.env_steps == 17 and float(restored.numpy()) == 5.0
    resumed.close()


def test_every_papers_worker_errors_are_worker_deaths():
    from dqn_tf import rounds
    from ga3c_tf import server
    assert issubclass(server.AgentDiedError, processes.WorkerDiedError)
    assert issubclass(rounds.ActorFailed, processes.WorkerDiedError)


def test_a_non_finite_loss_is_written_as_nan_then_stops_the_run(tmp_path):
    """The row that shows the divergence is written first; an absent value (no episode yet, no
    update in the interval) stays an empty cell, a NaN one reads 'nan'."""
    run_dir = str(tmp_path)
    tracker = tracker_lib.RunTracker(run_dir, total_steps=100, log_every_seconds=1e-6,
                                     checkpoint_every_steps=30,
                                     extra_columns=('loss', 'grad_norm', 'entropy'),
                                     trackables={'weights': tf.Variable(1.0)},
                                     stream=io.StringIO())
    tracker.add_steps(10, updates=2)
    tracker.log_interval(updates=2, extra={'loss': None, 'grad_norm': None, 'entropy': None})
    tracker.add_steps(10, updates=1)
    with pytest.raises(app.RunError) as raised:
        tracker.log_interval(updates=3, extra={'loss': float('nan'), 'grad_norm': 2.0,
                                               'entropy': float('nan')})
    tracker.close()
    message = str(raised.value)
    assert isinstance(raised.value, tracker_lib.DivergedError) and '\n' not in message
    assert 'non-finite loss (nan) at update 3, step 20' in message
    assert 'there is no checkpoint' in message
    absent, diverged = run_files.read_csv(os.path.join(run_dir, 'metrics.csv'))
    assert (absent['score_mean_100'], absent['loss'], absent['entropy']) == ('', '', '')
    assert (diverged['loss'], diverged['grad_norm'], diverged['entropy']) == ('nan', '2', 'nan')


def test_non_finite_weights_are_never_checkpointed(tmp_path):
    """A checkpoint due with non-finite weights asks the loop for a row first (it shows the
    statistics that diverged) and is not written; nor are the end's and Ctrl-C's: the finite
    checkpoint before stays the newest."""
    run_dir = str(tmp_path)
    variable = tf.Variable([1.0, 2.0])
    tracker = tracker_lib.RunTracker(run_dir, total_steps=100, log_every_seconds=3600,
                                     checkpoint_every_steps=30,
                                     trackables={'weights': variable}, stream=io.StringIO())
    tracker.add_steps(30)
    assert not tracker.interval_due()  # a finite checkpoint asks for no row
    tracker.maybe_checkpoint()
    tracker.add_steps(30, updates=4)
    variable.assign([1.0, float('inf')])
    assert tracker.checkpoint_due() and tracker.interval_due()
    tracker.log_interval(updates=7)
    with pytest.raises(tracker_lib.DivergedError, match=(
            r'non-finite weights at step 60 \(update 7 at the last metrics row\): the run '
            r'diverged; no checkpoint of it was written and the newest checkpoint, .*ckpt-30, '
            r'stays')):
        tracker.maybe_checkpoint()

    def loop(_):
        tracker.add_steps(5)
        raise KeyboardInterrupt

    with pytest.raises(tracker_lib.DivergedError):
        tracker_lib.run_training(tracker, contextlib.nullcontext, loop)
    assert sorted(os.listdir(os.path.join(run_dir, 'checkpoints'))) == [
        'checkpoint', 'ckpt-30.data-00000-of-00001', 'ckpt-30.index']


class _FakeTracker:
    """What run_training reads of a RunTracker."""

    def __init__(self, run_dir):
        self.run_dir = str(run_dir)
        self.restored_from = None
        self.superseded_rows = {}
        self.done = False
        self.env_steps = self.total_steps = 0
        self.stop_reason = None  # no --stop_at_*: check_session_stop() finds none
        self.check_session_stop = lambda: None
        self.saves = []

    def save(self):
        self.saves.append(self.env_steps)
        return f'ckpt-{self.env_steps}'

    def close(self):
        pass


@pytest.mark.parametrize('ending, calls', [
    ('finished', [(40, True)]), ('interrupted', [(20, True)]), ('failed', [])])
def test_the_session_end_hook_runs_after_a_clean_ends_checkpoint_once_the_runner_closed(
        tmp_path, ending, calls):
    tracker = _FakeTracker(tmp_path)
    closed = []
    seen = []

    @contextlib.contextmanager
    def open_runner():
        try:
            yield 'runner'
        finally:
            closed.append(True)

    def loop(runner):
        tracker.env_steps = 20
        if ending == 'interrupted':
            raise KeyboardInterrupt
        if ending == 'failed':
            raise RuntimeError('broken')
        tracker.env_steps = 40

    def session_end(env_steps):
        seen.append((env_steps, bool(closed)))
        assert tracker.saves and tracker.saves[-1] == env_steps

    expected = {'finished': None, 'interrupted': KeyboardInterrupt, 'failed': RuntimeError}
    with pytest.raises(expected[ending]) if expected[ending] else contextlib.nullcontext():
        tracker_lib.run_training(tracker, open_runner, loop, session_end=session_end)
    assert seen == calls
