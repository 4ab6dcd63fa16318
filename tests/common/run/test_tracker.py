"""RunTracker: CSV rows, episodes, checkpoints and resume (counters restored, CSVs appended)."""
import io
import os

import common  # noqa: F401
import pytest
import tensorflow as tf

from common.run import metrics
from common.run import session_stop
from common.run import tracker as tracker_lib
from common.system import errors
from common.system import processes
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
    # ... and the memory its process tree holds (this test's process, TensorFlow loaded).
    assert all(100 < float(row['rss_mb']) < 20_000 for row in rows)
    assert len(run_files.read_csv(os.path.join(run_dir, 'episodes.csv'))) == 4
    events = [name for name in os.listdir(run_dir) if name.startswith('events.')]
    assert events
    tags = {value.tag for event in tf.compat.v1.train.summary_iterator(
        os.path.join(run_dir, events[0])) for value in event.summary.value}
    assert {'rss_mb', 'run_cpu_cores', 'loss'} <= tags

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
    fake = type('Fake', (), {'total_steps': 1000, 'session_end_steps': None})()
    line = logger_line(fake, {'env_steps': 500, 'steps_per_sec': 100.0, 'score_mean_100': -20.5,
                              'episodes': 3, 'wall_time': 3725.0})
    assert 'steps 500/1000' in line and '100 steps/s' in line and '-20.5' in line
    assert 'elapsed 1:02:05' in line and 'ETA 0:00:05' in line
    past_the_end = logger_line(fake, {'env_steps': 1010, 'steps_per_sec': 100.0,
                                      'score_mean_100': 1.0, 'episodes': 3, 'wall_time': 5.0})
    assert 'ETA 0:00:00' in past_the_end
    # A virtual machine's host that takes a tenth of the CPU or more is named: a slow row's why.
    row = {'env_steps': 500, 'steps_per_sec': 60.0, 'score_mean_100': 1.0, 'episodes': 3,
           'wall_time': 5.0}
    assert logger_line(fake, dict(row, steal_pct=37.4)).endswith(
        "ETA 0:00:08 | the VM's host took 37% of the CPU")
    assert logger_line(fake, dict(row, steal_pct=9.9)).endswith('ETA 0:00:08')
    assert logger_line(fake, dict(row, steal_pct=None)).endswith('ETA 0:00:08')


def test_the_eta_holds_the_rate_of_the_last_ten_minutes_through_a_pause(tmp_path):
    """An evaluation or a synchronization stalls one interval: its row shows a rate of 0, but
    the ETA keeps the rate of the session's last ETA_WINDOW_SECONDS of rows."""
    stream = io.StringIO()
    logger = metrics.RunLogger(str(tmp_path), total_steps=1_000_000, tensorboard=False,
                               stream=stream)
    base = {'frames': 0, 'updates': 0, 'episodes': 1, 'score_mean_100': 1.0,
            'updates_per_sec': 0.0}
    for wall_time in range(0, 1210, 10):  # 100 steps/s for 20 minutes
        logger.log_interval(dict(base, wall_time=float(wall_time), env_steps=100 * wall_time,
                                 steps_per_sec=100.0))
    logger.log_interval(dict(base, wall_time=1220.0, env_steps=120_000, steps_per_sec=0.0))
    logger.metrics.close()
    logger.episodes.close()
    lines = stream.getvalue().splitlines()
    assert lines[0].endswith('ETA 2:46:40')  # the first row: its own rate, 1M steps at 100/s
    assert lines[-2].endswith('ETA 2:26:40')  # 880,000 steps at 100/s
    assert '| 0 steps/s |' in lines[-1]
    # From the row at 620 s (62,000 steps) to 1220 s: 58,000 steps in 600 s; 880,000 to go.
    assert lines[-1].endswith(f'ETA {metrics.format_duration(880_000 / (58_000 / 600))}')
    assert lines[-1].endswith('ETA 2:31:43')


def test_progress_line_counts_to_the_session_stop_below_total_steps():
    logger_line = metrics.RunLogger.progress_line
    row = {'env_steps': 500, 'steps_per_sec': 100.0, 'score_mean_100': 1.0, 'episodes': 3,
           'wall_time': 5.0}
    stopped = type('Fake', (), {'total_steps': 50000, 'session_end_steps': 1000})()
    line = logger_line(stopped, row)
    assert 'steps 500/1000 (run 50k)' in line and 'ETA 0:00:05' in line
    past_total = type('Fake', (), {'total_steps': 1000, 'session_end_steps': 50000})()
    assert 'steps 500/1000 |' in logger_line(past_total, row)


def test_tracker_hands_its_session_stop_to_the_progress_line(tmp_path):
    stream = io.StringIO()
    tracker = tracker_lib.RunTracker(str(tmp_path), total_steps=50000, log_every_seconds=0,
                                     checkpoint_every_steps=10 ** 9, stream=stream,
                                     session_stop=session_stop.SessionStop(steps=1000))
    assert tracker.logger.session_end_steps == 1000
    tracker.close()


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


def test_a_csv_of_a_run_begun_before_columns_were_added_gets_them_empty(tmp_path):
    """Columns added at the end (a paper's update_ms) and among the base ones (rss_mb, after
    run_cpu_cores): the file is rewritten in this run's order, each value under its name."""
    path = tmp_path / 'metrics.csv'
    old_columns = tuple(column for column in metrics.BASE_METRIC_COLUMNS
                        if column != 'rss_mb') + ('loss',)
    path.write_text(','.join(old_columns) + '\n' + ','.join(
        str(index) for index in range(len(old_columns))) + '\n')
    logger = metrics.RunLogger(str(tmp_path), extra_columns=('loss', 'update_ms'),
                               tensorboard=False, stream=io.StringIO())
    logger.metrics.write({'env_steps': 2, 'update_ms': 0.5, 'rss_mb': 12.5})
    logger.metrics.close()
    rows = run_files.read_csv(str(path))
    assert list(rows[0]) == list(metrics.BASE_METRIC_COLUMNS) + ['loss', 'update_ms']
    assert rows[0] == dict({column: str(index) for index, column in enumerate(old_columns)},
                           rss_mb='', update_ms='')
    assert rows[1]['env_steps'] == '2' and rows[1]['update_ms'] == '0.5'
    assert rows[1]['rss_mb'] == '12.5'
    assert not os.path.exists(f'{path}.columns-added')


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


def test_frames_per_step_is_the_frame_skip_or_one():
    class Atari:
        frame_skip = 4

    assert tracker_lib.frames_per_step(Atari()) == 4
    assert tracker_lib.frames_per_step(object()) == 1


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
    with pytest.raises(errors.RunError) as raised:
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
