"""runner.train, the one run call: it opens a session, builds the unit in it and loops it; it says
where a resumed run starts, returns at once from a complete one, and saves at the end, on Ctrl-C
(also when CPython hands it over as a SystemError) and when a worker dies, but never non-finite
weights; a real failure goes through unsaved; the session-end hook runs after a clean end's
checkpoint, once the session has closed; the unit's finish() runs however the loop ends."""
import contextlib
import io
import os

import common  # noqa: F401
import pytest
import tensorflow as tf

from common.run import runner
from common.run import tracker as tracker_lib
from common.system import errors
from common.system import processes
from common.tools import run_files


def _make(run_dir, variable):
    return tracker_lib.RunTracker(run_dir, total_steps=100, log_every_seconds=1e-6,
                                  checkpoint_every_steps=30, extra_columns=('loss',),
                                  frames_per_step=4, trackables={'weights': variable},
                                  stream=io.StringIO())


class _Scripted(runner.Unit):
    """A unit that plays a script: each advance() takes the next item, a number of env steps to
    report or a callable to call (which raises, or returns the steps)."""

    def __init__(self, *script, repeat=None):
        self.script = list(script)
        self.repeat = repeat  # the item once the script is spent
        self.sessions = []
        self.finished = 0

    def advance(self, env_steps):
        item = self.script.pop(0) if self.script else self.repeat
        steps = item() if callable(item) else item
        return steps, 0, ()

    def updates(self):
        return 0

    def finish(self):
        self.finished += 1

    def of(self, session):
        """unit_of for runner.train: records the session it was built in."""
        self.sessions.append(session)
        return self


class _Session:
    """A context manager that records, when it closes, whether a checkpoint was there."""

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.checkpoint_when_closed = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.checkpoint_when_closed = bool(os.listdir(os.path.join(self.run_dir, 'checkpoints')))


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
    unit = _Scripted(repeat=70)
    assert runner.train(resumed, contextlib.nullcontext, unit.of) == 100
    assert 'resuming from' in capsys.readouterr().out
    rows = run_files.read_csv(os.path.join(run_dir, 'metrics.csv'))
    assert [int(row['env_steps']) for row in rows] == [30, 100]
    (aside,) = run_files.read_csv(os.path.join(run_dir, 'metrics.superseded.csv'))
    assert int(aside['env_steps']) == 50 and float(aside['loss']) == 2.0


def _interrupt_inside_a_c_callback():
    """What Ctrl-C raises when it lands while TensorFlow converts a numpy array: CPython turns
    the KeyboardInterrupt set inside the callback into a SystemError caused by it."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as interrupt:
        raise SystemError('__array__ returned a result with an exception set') from interrupt


def _interrupt_in_python():
    raise KeyboardInterrupt


def _interrupt_cut_from_its_chain():
    """What TensorFlow raises when Ctrl-C lands while it binds a tf.function's numpy input: a
    TypeError raised `from None`, no KeyboardInterrupt in its chain; app's handler noted the
    signal."""
    errors.note_stop_signal()
    raise TypeError('Binding inputs to tf.function failed due to `<built-in method __array__ '
                    'of numpy.ndarray object> returned a result with an exception set`') from None


@pytest.mark.parametrize('interrupt', [_interrupt_in_python, _interrupt_inside_a_c_callback,
                                       _interrupt_cut_from_its_chain])
def test_ctrl_c_saves_before_the_session_closes(tmp_path, capsys, monkeypatch, interrupt):
    monkeypatch.setattr(errors, '_stop_signalled', False)  # restored after the test
    run_dir = str(tmp_path)
    tracker = _make(run_dir, tf.Variable(1.0))
    session = _Session(run_dir)
    unit = _Scripted(12, interrupt)
    with pytest.raises(KeyboardInterrupt):  # it goes on to the entry point
        runner.train(tracker, lambda: session, unit.of)
    assert session.checkpoint_when_closed is True
    assert unit.sessions == [session] and unit.finished == 1
    assert 'interrupted at step 12; saved' in capsys.readouterr().out
    assert tracker.logger.metrics._file.closed  # pylint: disable=protected-access
    resumed = _make(run_dir, tf.Variable(0.0))
    assert resumed.env_steps == 12
    resumed.close()


def test_an_error_not_caused_by_ctrl_c_goes_through_unsaved(tmp_path):
    run_dir = str(tmp_path)
    tracker = _make(run_dir, tf.Variable(1.0))

    def fail():
        raise SystemError('a real failure')

    unit = _Scripted(fail)
    with pytest.raises(SystemError, match='a real failure'):
        runner.train(tracker, contextlib.nullcontext, unit.of)
    assert unit.finished == 1
    checkpoints = os.path.join(run_dir, 'checkpoints')
    assert not os.path.exists(checkpoints) or not os.listdir(checkpoints)


def test_an_error_building_the_unit_is_an_interrupt_or_a_failure_like_any_other(tmp_path, capsys):
    """unit_of runs inside the session (a replay to restore, a prepopulation): Ctrl-C there is
    saved like Ctrl-C in the loop."""
    run_dir = str(tmp_path)
    tracker = _make(run_dir, tf.Variable(1.0))
    session = _Session(run_dir)

    def unit_of(_):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.train(tracker, lambda: session, unit_of)
    assert session.checkpoint_when_closed is True
    assert 'interrupted at step 0; saved' in capsys.readouterr().out


def test_a_resume_runs_to_the_end_and_a_complete_run_opens_no_session(tmp_path, capsys):
    run_dir = str(tmp_path)
    tracker = _make(run_dir, tf.Variable(1.0))
    tracker.add_steps(40)
    tracker.save()
    tracker.close()

    resumed = _make(run_dir, tf.Variable(0.0))
    unit = _Scripted(repeat=30)
    assert runner.train(resumed, lambda: _Session(run_dir), unit.of, resume_note=' (note)') == 100
    out = capsys.readouterr().out
    assert 'resuming from' in out and 'at step 40 (note)' in out and len(unit.sessions) == 1
    complete = _make(run_dir, tf.Variable(0.0))
    assert complete.env_steps == 100
    assert runner.train(complete, lambda: _Session(run_dir), unit.of) == 100
    assert 'run already complete: 100 >= total_steps 100' in capsys.readouterr().out
    assert len(unit.sessions) == 1  # a complete run opens no session


def test_a_dead_worker_ends_the_run_with_one_line_and_a_checkpoint(tmp_path):
    """Every paper's worker deaths (pool workers, GA3C agents, DQN samplers) are
    processes.WorkerDiedError: the learner's state at that step is saved, then errors.RunError."""
    run_dir = str(tmp_path)
    variable = tf.Variable(1.0)
    tracker = _make(run_dir, variable)
    session = _Session(run_dir)

    def die():
        variable.assign(5.0)
        raise processes.WorkerDiedError('ProcessPool worker 3 (pid 99) was killed by signal '
                                        'SIGKILL\nsecond line')

    with pytest.raises(errors.RunError) as raised:
        runner.train(tracker, lambda: session, _Scripted(17, die).of)
    message = str(raised.value)
    assert '\n' not in message and 'worker 3 (pid 99) was killed' in message
    assert 'run stopped at step 17, saved' in message and 'ckpt-17' in message
    assert session.checkpoint_when_closed is True
    restored = tf.Variable(0.0)
    resumed = _make(run_dir, restored)
    assert resumed.env_steps == 17 and float(restored.numpy()) == 5.0
    resumed.close()


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

    with pytest.raises(tracker_lib.DivergedError):  # Ctrl-C's save
        runner.train(tracker, contextlib.nullcontext, _Scripted(_interrupt_in_python).of)
    assert sorted(os.listdir(os.path.join(run_dir, 'checkpoints'))) == [
        'checkpoint', 'ckpt-30.data-00000-of-00001', 'ckpt-30.index']


class _FakeTracker:
    """What runner.train reads of a RunTracker, for a unit that ends the run at once."""

    def __init__(self, run_dir):
        self.run_dir = str(run_dir)
        self.restored_from = None
        self.superseded_rows = {}
        self.env_steps = 0
        self.total_steps = 40
        self.stop_reason = None  # no --stop_at_*: check_session_stop() finds none
        self.check_session_stop = lambda: None
        self.saves = []

    @property
    def done(self):
        return self.env_steps >= self.total_steps

    def start_interval(self):
        pass

    def save(self):
        self.saves.append(self.env_steps)
        return f'ckpt-{self.env_steps}'

    def close(self):
        pass


@pytest.mark.parametrize('ending, calls', [
    ('finished', [(40, True)]), ('interrupted', [(20, True)]), ('failed', [])])
def test_the_session_end_hook_runs_after_a_clean_ends_checkpoint_once_the_session_closed(
        tmp_path, ending, calls):
    tracker = _FakeTracker(tmp_path)
    closed = []
    seen = []

    @contextlib.contextmanager
    def open_session():
        try:
            yield 'session'
        finally:
            closed.append(True)

    def unit_of(_):
        tracker.env_steps = 20
        if ending == 'interrupted':
            raise KeyboardInterrupt
        if ending == 'failed':
            raise RuntimeError('broken')
        tracker.env_steps = 40  # done: the loop ends before its first advance
        return _Scripted()

    def session_end(env_steps):
        seen.append((env_steps, bool(closed)))
        assert tracker.saves and tracker.saves[-1] == env_steps

    expected = {'finished': None, 'interrupted': KeyboardInterrupt, 'failed': RuntimeError}
    with pytest.raises(expected[ending]) if expected[ending] else contextlib.nullcontext():
        runner.train(tracker, open_session, unit_of, session_end=session_end)
    assert seen == calls
