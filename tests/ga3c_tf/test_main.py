"""`python -m ga3c_tf.main` end to end: presets, run directory, resume, play, the A3C-CPU
baseline, and Pong through agent processes leaving nothing behind, whenever the Ctrl-C comes
(its bad bindings: tests/test_entry_points.py)."""
import dataclasses
import os
import re
import signal
import time

import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf

from common.launch import app
from common.tools import run_files
from ga3c_tf import main as ga3c_main

# Ctrl-C's exit status: 130, or death by SIGINT (-2; the shell shows 130 for both), which
# CPython chooses at exit when the interrupt once surfaced inside code it ran through
# PyRun_String (its _Py_UnhandledKeyboardInterrupt flag), though the run caught it, saved
# and printed 'interrupted'. Seen once under two parallel test workers.
INTERRUPTED_STATUSES = (130, -2)

CARTPOLE_BINDINGS = [
    'GA3CConfig.env_config = @GymConfig()',
    "GymConfig.env_id = 'CartPole-v1'",
    "GA3CConfig.network = 'mlp'",
    'GA3CConfig.num_agents = 2',
    'GA3CConfig.dynamic_settings = False',
    'GA3CConfig.total_steps = 600',
    'GA3CConfig.checkpoint_every_steps = 300',
    'GA3CConfig.log_every_seconds = 0.5',
]


@pytest.fixture
def cli(entry_point):
    """`python -m ga3c_tf.main`, on gin/ga3c/original_code.gin unless told another preset."""
    return entry_point('ga3c_tf.main', 'gin/ga3c/original_code.gin')


def test_presets_hold_the_original_code_and_paper_values():
    root = app.PROJECT_ROOT
    original = ga3c_main.configure([os.path.join(root, 'gin/ga3c/original_code.gin')],
                                   ["AtariConfig.game = 'pong'"])
    assert (original.num_agents, original.num_predictors, original.num_trainers) == (32, 2, 2)
    assert (original.horizon, original.gamma, original.prediction_batch_size) == (5, 0.99, 128)
    assert (original.prediction_queue_size, original.training_queue_size) == (100, 100)
    assert (original.learning_rate, original.final_learning_rate) == (3e-4, 3e-4)
    assert (original.entropy_coef, original.log_epsilon, original.clip_norm) == (0.01, 1e-6, 0)
    assert (original.rmsprop_decay, original.rmsprop_epsilon) == (0.99, 0.1)
    # TF1's RMSPropOptimizer: epsilon inside the sqrt, mean squares starting at ones.
    assert (original.rmsprop_epsilon_inside_sqrt, original.rmsprop_initial_mean_square) == (
        True, 1.0)
    assert original.training_min_batch_size == 0 and original.dynamic_interval_seconds == 20
    assert original.dynamic_walk == 'every_knob'  # ThreadDynamicAdjustment.py's random walk
    assert (original.input_scale, original.input_offset) == (1 / 128, -1.0)
    # NetworkVP.py: padded convolutions, weights and biases U(+-1/sqrt(fan_in)).
    assert (original.conv_padding, original.initializer) == ('same', 'fan_in_uniform')
    assert original.model_kwargs()['torso_kwargs'] == {'padding': 'same'}
    # gym's PongDeterministic-v0, which the code plays: sticky actions, the last of 4 frames.
    env = original.env_config
    assert (env.frame_skip, env.repeat_action_probability, env.max_pool, env.noop_max,
            env.max_episode_steps) == (4, 0.25, False, 0, 100_000)
    # pong.gin: the original code on Pong but for the minimum training batch (section 5.3).
    pong = ga3c_main.configure([os.path.join(root, 'gin/ga3c/pong.gin')], [])
    assert pong == dataclasses.replace(original, training_min_batch_size=32)
    paper = ga3c_main.configure([os.path.join(root, 'gin/ga3c/paper.gin')], [])
    assert (paper.num_predictors, paper.num_trainers) == (2, 2)
    assert 20 <= paper.training_min_batch_size <= 40 and paper.dynamic_interval_seconds == 60
    assert paper.dynamic_walk == 'one_knob'  # "randomly change NP, NT, or NA by +-1" (4.3)
    large = ga3c_main.configure([os.path.join(root, 'gin/ga3c/pong.gin'),
                                 os.path.join(root, 'gin/ga3c/large.gin')], [])
    assert large.network == 'ga3c_large' and large.torso_kwargs == {'first_stride': 4}
    assert large.model_kwargs()['torso_kwargs'] == {'first_stride': 4, 'padding': 'same'}


@pytest.mark.slow
def test_run_writes_the_run_format_resumes_and_plays(tmp_path, cli, entry_point):
    first = cli.run(cli.flags(CARTPOLE_BINDINGS), cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    (run_dir,) = [tmp_path / 'runs' / name for name in os.listdir(tmp_path / 'runs')]
    assert run_dir.name.startswith('ga3c-CartPole-v1-')
    assert {'operative_config.gin', 'metrics.csv', 'episodes.csv', 'checkpoints'} <= set(
        os.listdir(run_dir))
    rows = run_files.read_csv(run_dir / 'metrics.csv')
    last = rows[-1]
    assert int(last['env_steps']) >= 600
    # A row covers the time since the one before, and the last can be a short interval with
    # nothing trained (its lag cells empty) or predicted: values are checked over all rows.
    for column in ('pps', 'tps', 'frames_per_sec', 'prediction_queue_size',
                   'training_queue_size', 'mean_prediction_batch'):
        assert all(float(row[column]) >= 0 for row in rows), column
    for column in ('mean_policy_lag', 'max_policy_lag'):
        lags = [float(row[column]) for row in rows if row[column]]
        assert lags and min(lags) >= 0, column
    for column in ('prediction_wait_ms', 'update_ms'):  # section 5.1's profile
        assert any(row[column] and float(row[column]) > 0 for row in rows), column
    for column in ('prediction_call_share', 'update_assembly_share'):
        shares = [float(row[column]) for row in rows if row[column]]
        # A share of an interval's seconds; an interval's edges can tip one past 1, not most.
        assert shares and min(shares) >= 0 and sorted(shares)[len(shares) // 2] <= 1.1, column
    assert (int(last['num_agents']), int(last['num_predictors']),
            int(last['num_trainers'])) == (2, 2, 2)
    assert any(float(row['pps']) > 0 and float(row['mean_prediction_batch']) >= 1
               for row in rows)
    assert len(run_files.read_csv(run_dir / 'episodes.csv')) > 0

    again = cli.run(cli.flags(CARTPOLE_BINDINGS), cwd=tmp_path)
    assert again.returncode == 0 and 'already complete' in again.stdout
    longer = cli.run(cli.flags(CARTPOLE_BINDINGS + ['GA3CConfig.total_steps = 1200']) +
                     [f'--run_dir={run_dir}'], cwd=tmp_path)
    assert longer.returncode == 0, longer.stderr[-3000:]
    assert 'resuming from' in longer.stdout
    steps = [int(row['env_steps']) for row in run_files.read_csv(run_dir / 'metrics.csv')]
    assert steps == sorted(steps) and steps[-1] >= 1200

    evaluation = entry_point('common.evaluate').run(
        [f'--run_dir={run_dir}', '--num_episodes=3'], tmp_path, timeout=120)
    assert evaluation.returncode == 0, evaluation.stderr[-3000:]
    (row,) = run_files.read_csv(run_dir / 'eval.csv')
    assert int(row['episodes']) == 3 and int(row['env_steps']) >= 1200


@pytest.mark.slow
def test_a_diverging_run_stops_with_one_line_and_keeps_its_finite_checkpoints(
        tmp_path, finite_checkpoints, errors_in, cli):
    """At a learning rate of 1e30 the trainer threads' updates go to NaN within a few: the run
    stops with one line naming the step and the update, exit 1, and no checkpoint holds a
    non-finite value. The loss or gradient norm of a row stops it after that row; weights that
    went non-finite between rows are refused at the checkpoint."""
    result = cli.run(cli.flags(CARTPOLE_BINDINGS + [
        'GA3CConfig.learning_rate = 1e30', 'GA3CConfig.total_steps = 20000',
        'GA3CConfig.checkpoint_every_steps = 100', 'GA3CConfig.log_every_seconds = 0.05']) +
        ['--run_dir=run'], cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    (error,) = errors_in(result.stderr)
    found = re.match(r'error: non-finite (loss|grad_norm|weights) .*step ([\d,]+).*: the run '
                     r'diverged', error)
    assert found and 'update' in error and 'Traceback' not in result.stderr, result.stderr[-3000:]
    steps = int(found.group(2).replace(',', ''))
    last = run_files.read_csv(tmp_path / 'run' / 'metrics.csv')[-1]
    assert int(last['env_steps']) == steps
    if found.group(1) != 'weights':
        assert 'nan' in (last['loss'], last['grad_norm'])
    kept = finite_checkpoints(tmp_path / 'run')
    assert kept and max(kept) < steps and all(kept.values()), kept


@pytest.mark.slow
def test_a3c_cpu_baseline_runs_from_the_same_config(tmp_path, cli):
    result = cli.run(cli.flags(CARTPOLE_BINDINGS + ["GA3CConfig.algorithm = 'a3c_cpu'"]) +
                     ['--run_dir=run'], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = run_files.read_csv(tmp_path / 'run' / 'metrics.csv')
    assert int(rows[-1]['env_steps']) >= 600 and float(rows[-1]['pps']) > 0
    assert int(rows[-1]['updates']) > 0 and os.listdir(tmp_path / 'run' / 'checkpoints')


def _model_weights(run_dir):
    """The model's variables in run_dir's latest checkpoint, by checkpoint key."""
    reader = tf.train.load_checkpoint(str(run_dir / 'checkpoints'))
    return {key: reader.get_tensor(key) for key in reader.get_variable_to_shape_map()
            if key.startswith('model/')}


@pytest.mark.slow
def test_a3c_cpu_resumes_with_its_schedule_updates_and_rmsprop_statistics(tmp_path, cli):
    # The learning rate anneals to 0 over the first run's 600 steps: a resumed run that took
    # up the schedule where it ended cannot change the weights any more.
    bindings = CARTPOLE_BINDINGS + ["GA3CConfig.algorithm = 'a3c_cpu'",
                                    'GA3CConfig.learning_rate = 0.01',
                                    'GA3CConfig.final_learning_rate = 0.0',
                                    'GA3CConfig.anneal_steps = 600']
    first = cli.run(cli.flags(bindings) + ['--run_dir=run'], cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    run_dir = tmp_path / 'run'
    weights = _model_weights(run_dir)
    reader = tf.train.load_checkpoint(str(run_dir / 'checkpoints'))
    mean_square_key = 'rmsprop_mean_square/.ATTRIBUTES/VARIABLE_VALUE'
    assert reader.get_tensor(mean_square_key).max() > 0
    updates_before = int(reader.get_tensor('updates/.ATTRIBUTES/VARIABLE_VALUE'))
    rows_before = run_files.read_csv(run_dir / 'metrics.csv')
    assert updates_before >= int(rows_before[-1]['updates']) > 0
    # Agents step on while the main loop saves or logs, so the first run can end well past 600.
    steps_before = int(rows_before[-1]['env_steps'])
    total_steps = steps_before + 600

    again = cli.run(cli.flags(bindings + [f'GA3CConfig.total_steps = {total_steps}']) +
                    ['--run_dir=run'], cwd=tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert 'resuming from' in again.stdout
    resumed = _model_weights(run_dir)
    assert weights.keys() == resumed.keys() and weights
    for key, value in weights.items():
        np.testing.assert_array_equal(resumed[key], value, err_msg=key)
    rows = run_files.read_csv(run_dir / 'metrics.csv')
    assert len(rows) > len(rows_before) and int(rows[-1]['env_steps']) >= total_steps
    assert int(rows[len(rows_before)]['updates']) >= updates_before
    assert [int(row['updates']) for row in rows] == sorted(int(row['updates']) for row in rows)


@pytest.mark.slow
def test_pong_ctrl_c_ends_cleanly_and_leaves_nothing_behind(tmp_path, process_tree, cli):
    shm_before = process_tree.shm_entries()
    process = cli.start(cli.flags(['GA3CConfig.num_agents = 3',
                                   'GA3CConfig.total_steps = 10000000',
                                   'GA3CConfig.log_every_seconds = 1.0'], 'gin/ga3c/pong.gin') +
                        ['--run_dir=run'], tmp_path)
    metrics = tmp_path / 'run' / 'metrics.csv'

    def playing():  # a log interval with predictions: the agents are up (slow on a busy CPU)
        return metrics.exists() and any(float(row['pps']) > 0 for row in run_files.read_csv(metrics))

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not playing():
        time.sleep(0.5)
    assert playing()
    agents = process_tree.spawned_children(process.pid)
    assert len(agents) >= 3
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode in INTERRUPTED_STATUSES, stderr[-3000:]
    assert 'interrupted at step' in stdout and 'interrupted' in stderr
    assert process_tree.wait_for(lambda: not process_tree.alive(agents), 15)
    assert not process_tree.leaked_shm(shm_before)


def _poll(predicate, seconds, interval):
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(interval)
    return predicate()


# Seconds from the run's last metrics row to its Ctrl-C: the close of the server takes from
# about 0.2 s (an idle machine) to over 0.8 s (a busy one), then come the last save and the exit.
@pytest.mark.slow
@pytest.mark.parametrize('delay', [0.05, 0.1, 0.15, 0.25, 0.4, 0.6])
def test_a_ctrl_c_as_the_run_ends_leaves_no_segment(tmp_path, delay, process_tree, cli):
    """A Ctrl-C landing while a finished run closes its server used to cut the close short:
    the observation segment was left to multiprocessing's resource tracker (its 'leaked
    shared_memory' warning at exit) and trainer threads still running often aborted the exit
    (-6). With a short budget 1 Ctrl-C ending in 6 or so did; aimed at the run's last moments,
    as here, most did."""
    shm_before = process_tree.shm_entries()
    total_steps = 200
    run = cli.start(cli.flags(CARTPOLE_BINDINGS[:-3] + [
        f'GA3CConfig.total_steps = {total_steps}', 'GA3CConfig.log_every_seconds = 0.25']) +
        ['--run_dir=run'], tmp_path)
    metrics = tmp_path / 'run' / 'metrics.csv'

    def ending():  # the last row is written: the loop is done and the server about to close
        try:
            rows = run_files.read_csv(metrics)
        except (OSError, ValueError):  # being written
            return False
        return any(int(row['env_steps'] or 0) >= total_steps for row in rows)

    try:
        assert _poll(lambda: ending() or run.poll() is not None, 120, 0.01)
        time.sleep(delay)
        run.send_signal(signal.SIGINT)
        _, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode in (0,) + INTERRUPTED_STATUSES, stderr[-3000:]
    assert 'leaked shared_memory' not in stderr and 'Fatal Python error' not in stderr, \
        stderr[-3000:]
    assert not process_tree.leaked_shm(shm_before)


@pytest.mark.slow
def test_a_killed_agent_is_reported_and_the_run_ends(tmp_path, process_tree, errors_in, cli):
    process = cli.start(cli.flags(CARTPOLE_BINDINGS[:-3] + [
        'GA3CConfig.total_steps = 100000000']) + ['--run_dir=run'], tmp_path)
    deadline = time.monotonic() + 60
    agents = []
    while time.monotonic() < deadline and len(agents) < 2:
        agents = process_tree.spawned_children(process.pid)
        time.sleep(0.5)
    time.sleep(3)
    os.kill(agents[0], signal.SIGKILL)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 1
    error_lines = errors_in(stderr)
    assert len(error_lines) == 1 and 'killed by signal SIGKILL' in error_lines[0], stderr[-2000:]
    assert process_tree.wait_for(lambda: not process_tree.alive(agents), 15)


@pytest.mark.slow
def test_agents_exit_by_themselves_when_the_main_process_is_killed(tmp_path, process_tree, cli):
    shm_before = process_tree.shm_entries()
    process = cli.start(cli.flags(
        ['GA3CConfig.num_agents = 3', 'GA3CConfig.total_steps = 10000000',
         'GA3CConfig.training_queue_size = 2', 'GA3CConfig.log_every_seconds = 1.0'],
        'gin/ga3c/pong.gin') + ['--run_dir=run'], tmp_path)
    metrics = tmp_path / 'run' / 'metrics.csv'
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (
            not metrics.exists() or len(run_files.read_csv(metrics)) < 2):
        time.sleep(0.5)
    agents = process_tree.spawned_children(process.pid)
    assert len(agents) >= 3
    process.kill()
    process.communicate(timeout=30)
    assert process_tree.wait_for(lambda: not process_tree.alive(agents), 15)
    # The resource tracker removes the shared memory (leaked_shm waits up to 15 s).
    assert not process_tree.leaked_shm(shm_before)
