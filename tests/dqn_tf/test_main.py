"""`python -m dqn_tf.main` end to end; the speed test and bench rows on a tiny budget."""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import tensorflow as tf

from common.launch import app
from common.tools import run_files
from dqn_tf import bench_rows
from dqn_tf import dqn
from dqn_tf import main as dqn_main

# Ctrl-C's exit status: 130, or death by SIGINT (-2; the shell shows 130 for both), which
# CPython chooses at exit when the interrupt once surfaced inside code it ran through
# PyRun_String (its _Py_UnhandledKeyboardInterrupt flag), though the run caught it, saved
# and printed 'interrupted'. Seen once under two parallel test workers.
INTERRUPTED_STATUSES = (130, -2)

CARTPOLE_BINDINGS = [
    'DQNConfig.env_config = @GymConfig()',
    "GymConfig.env_id = 'CartPole-v1'",
    "DQNConfig.network = 'mlp'",
    'DQNConfig.num_actors = 2',
    'DQNConfig.total_steps = 400',
    'DQNConfig.target_period = 100',
    'DQNConfig.replay_capacity = 1000',
    'DQNConfig.prepopulate_steps = 100',
    'DQNConfig.eval_every_steps = 200',
    'DQNConfig.eval_protocol = @EvalProtocol()',  # fast DQN's protocol, 2 episodes
    "EvalProtocol.base = 'fast_dqn'",
    'EvalProtocol.episodes = 2',
    'DQNConfig.checkpoint_every_steps = 200',
    'DQNConfig.log_every_seconds = 0.01',
]


def _run(module, args, cwd, timeout=240):
    env = dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)
    return subprocess.run([sys.executable, '-m', module] + args, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _flags(bindings, gin_file='gin/dqn/pong.gin'):
    return [f'--gin_file={os.path.join(app.PROJECT_ROOT, gin_file)}'] + [
        f'--gin_bindings={binding}' for binding in bindings]


def test_presets_hold_the_papers_values():
    config = dqn_main.configure([os.path.join(app.PROJECT_ROOT, 'gin/dqn/pong.gin')], [])
    assert (config.batch_size, config.replay_capacity, config.target_period,
            config.train_period, config.gamma, config.prepopulate_steps) == (
        32, 1_000_000, 10_000, 4, 0.99, 50_000)
    assert (config.learning_rate, config.rmsprop_decay, config.rmsprop_epsilon) == (
        2.5e-4, 0.95, 0.01)
    # The authors' tf.keras centered RMSProp: epsilon after the sqrt, mean squares from zeros.
    optimizer = dqn.build_learner(config).optimizer
    assert (optimizer.centered, optimizer.epsilon_inside_sqrt,
            optimizer.initial_mean_square) == (True, False, 0.0)
    assert (config.initial_epsilon, config.final_epsilon, config.epsilon_decay_steps) == (
        1.0, 0.1, 1_000_000)
    protocol = config.evaluation_protocol()  # section 5.2; the cap the authors' code's
    assert (config.eval_every_steps, config.eval_protocol, protocol.episodes, protocol.epsilon,
            protocol.noop_max, protocol.max_frames) == (250_000, 'fast_dqn', 30, 0.05, 30, 108_000)
    assert (config.mode, config.num_actors, config.network) == ('both', 8, 'nature')
    env = config.env_config
    assert (env.game, env.noop_max, env.episodic_life, env.clip_rewards,
            env.max_episode_steps) == ('pong', 30, True, True, 27_000)
    assert env.resize == 'linear'  # the authors' run_dqn.py --interp default
    # atari_env.py: a lost life is done, restarting HistoryWrapper's stack; FIRE at a game's
    # start only (FireResetWrapper sits inside EpisodicLifeWrapper).
    assert (env.life_loss_restarts_stack, env.fire_reset, env.fire_on_life_loss) == (
        True, True, False)
    standard = dqn_main.configure([os.path.join(app.PROJECT_ROOT, 'gin/dqn/pong.gin'),
                                   os.path.join(app.PROJECT_ROOT, 'gin/dqn/standard.gin')], [])
    assert (standard.mode, standard.num_actors) == ('standard', 1)


@pytest.mark.slow
@pytest.mark.parametrize('binding, named', [
    ('DQNConfig.num_actors = 3', 'num_actors=3'),
    ('DQNConfig.batch_size = 0', 'batch_size'),
    ("AtariConfig.game = 'pongg'", 'pongg'),
    ('DQNConfig.num_workerz = 3', 'num_workerz'),
    ('RMSProp.centered = False', "fast DQN always runs the paper's centered RMSProp"),
])
def test_bad_config_stops_with_one_line_before_anything_starts(tmp_path, binding, named, errors_in):
    result = _run('dqn_tf.main', _flags([binding]) + ['--run_dir=run'], cwd=tmp_path)
    assert result.returncode == 2
    error_lines = errors_in(result.stderr)
    assert len(error_lines) == 1 and named in error_lines[0], result.stderr[-2000:]
    assert not (tmp_path / 'run').exists()


@pytest.mark.slow
def test_run_writes_the_run_directory_evaluates_and_rerun_resumes(tmp_path):
    first = _run('dqn_tf.main', _flags(CARTPOLE_BINDINGS), cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    (run_dir,) = [tmp_path / 'runs' / name for name in os.listdir(tmp_path / 'runs')]
    assert run_dir.name.startswith('dqn-CartPole-v1-')
    names = set(os.listdir(run_dir))
    assert {'operative_config.gin', 'metrics.csv', 'episodes.csv', 'eval.csv', 'checkpoints',
            'invocation.json'} <= names
    rows = run_files.read_csv(run_dir / 'metrics.csv')
    assert int(rows[-1]['env_steps']) == 400 and int(rows[-1]['updates']) == 100
    assert {'epsilon', 'loss', 'replay_size', 'steps_per_sec'} <= set(rows[-1])
    evaluations = run_files.read_csv(run_dir / 'eval.csv')
    assert [int(row['env_steps']) for row in evaluations] == [200, 400]
    assert [int(row['episodes']) for row in evaluations] == [2, 2]  # the bound protocol's

    again = _run('dqn_tf.main', _flags(CARTPOLE_BINDINGS), cwd=tmp_path)
    assert again.returncode == 0 and 'already complete' in again.stdout
    longer = _run('dqn_tf.main', _flags(CARTPOLE_BINDINGS + ['DQNConfig.total_steps = 600']) +
                  [f'--run_dir={run_dir}'], cwd=tmp_path)
    assert longer.returncode == 0, longer.stderr[-3000:]
    assert 'resuming from' in longer.stdout and 'at step 400' in longer.stdout
    rows = run_files.read_csv(run_dir / 'metrics.csv')
    # Counters and the optimizer's update count continue; the epsilon schedule follows the step.
    assert int(rows[-1]['env_steps']) == 600 and int(rows[-1]['updates']) == 150

    evaluation = _run('common.evaluate', [f'--run_dir={run_dir}', '--num_episodes=2'],
                      cwd=tmp_path, timeout=120)
    assert evaluation.returncode == 0, evaluation.stderr[-3000:]
    assert int(run_files.read_csv(run_dir / 'eval.csv')[-1]['env_steps']) == 600


@pytest.mark.slow
def test_ctrl_c_saves_a_checkpoint_and_stops_every_thread(tmp_path, process_tree):
    """Ctrl-C (twice) once the loop has logged a row: exit 130 with a checkpoint. (metrics.csv
    exists before the loop starts, when a Ctrl-C saves nothing: the test waits for a row.)"""
    bindings = CARTPOLE_BINDINGS + ['DQNConfig.total_steps = 10000000',
                                    'DQNConfig.eval_every_steps = 0', 'DQNConfig.concurrent = True']
    env = dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)
    process = subprocess.Popen([sys.executable, '-m', 'dqn_tf.main'] + _flags(bindings) +
                               ['--run_dir=run'], cwd=tmp_path, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        metrics = tmp_path / 'run' / 'metrics.csv'
        assert process_tree.wait_for(
            lambda: metrics.exists() and len(run_files.read_csv(metrics)) >= 1, 120)
        process.send_signal(signal.SIGINT)
        time.sleep(0.05)
        process.send_signal(signal.SIGINT)  # a second Ctrl-C must not cut the checkpoint short
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode in INTERRUPTED_STATUSES, stderr[-3000:]
    assert 'interrupted at step' in stdout and 'interrupted' in stderr
    assert any(name.startswith('ckpt-') for name in os.listdir(tmp_path / 'run' / 'checkpoints'))


@pytest.mark.slow
def test_pong_runs_with_eight_actor_threads_and_exits_cleanly(tmp_path):
    result = _run('dqn_tf.main', _flags([
        'DQNConfig.total_steps = 64', 'DQNConfig.target_period = 32',
        'DQNConfig.prepopulate_steps = 64', 'DQNConfig.replay_capacity = 1024',
        'DQNConfig.eval_every_steps = 0']) + ['--run_dir=run'], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = run_files.read_csv(tmp_path / 'run' / 'metrics.csv')
    assert int(rows[-1]['env_steps']) == 64 and int(rows[-1]['updates']) == 16


@pytest.mark.slow
def test_speedtest_writes_the_ratio_table(tmp_path):
    path = tmp_path / 'speed.json'
    result = _run('dqn_tf.speedtest', ['--steps=16', '--modes=standard,both', '--actors=1',
                                       '--prepopulate=64', '--repeats=3', f'--json={path}'],
                  cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads(path.read_text())['rows']
    assert [(row['mode'], row['actors']) for row in rows] == [
        ('standard', 1), ('both', 1), ('learner-only', 0)]
    assert rows[0]['speedup'] == 1.0
    learner_rounds = rows[-1]['round_seconds']
    for row in rows:  # each row is the median of its three rounds
        assert len(row['round_seconds']) == 3
        assert row['seconds'] == sorted(row['round_seconds'])[1]
        ratios = sorted(elapsed / learner
                        for elapsed, learner in zip(row['round_seconds'], learner_rounds))
        assert row['vs_learner'] == pytest.approx(ratios[1])
    assert rows[-1]['vs_learner'] == 1.0
    assert all(row['seconds'] > 0 and row['speedup'] > 0 for row in rows)
    assert 'speedup' in result.stdout and 'learner-only' in result.stdout
    bad = _run('dqn_tf.speedtest', ['--steps=10', '--actors=4'], cwd=tmp_path)
    assert bad.returncode == 2 and 'steps=10' in bad.stderr


@pytest.mark.slow
def test_speedtest_times_the_actor_rounds_alone_in_threads_and_processes(tmp_path):
    path = tmp_path / 'actors.json'
    result = _run('dqn_tf.speedtest', ['--actors_only', '--actors=1,2', '--steps=8',
                                       '--prepopulate=32', '--actor_envs=thread,process',
                                       f'--json={path}'], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads(path.read_text())['rows']
    assert [(row['mode'], row['actors'], row['actor_envs']) for row in rows] == [
        ('actors-only', 1, 'thread'), ('actors-only', 1, 'process'),
        ('actors-only', 2, 'thread'), ('actors-only', 2, 'process')]
    assert rows[0]['speedup'] == 1.0 and not any('vs_learner' in row for row in rows)
    for row in rows:
        assert row['speedup'] == pytest.approx(rows[0]['seconds'] / row['seconds'])
    assert 'random steps of the actors alone' in result.stdout
    bad = _run('dqn_tf.speedtest', ['--actor_envs=thread,gpu'], cwd=tmp_path)
    assert bad.returncode == 2 and '--actor_envs=thread,gpu; allowed: thread,process,vector' in \
        bad.stderr


@pytest.mark.slow
def test_bench_rows_measure_whole_periods(monkeypatch):
    monkeypatch.setattr(bench_rows, 'BENCH_PERIOD', 40)
    monkeypatch.setattr(bench_rows, 'BENCH_PERIODS', 2)
    settings = {'seconds': 0.5, 'warmup_seconds': 0.0, 'num_envs': 32, 'game': 'pong',
                'num_actors': 2}
    timed = ('dqn/standard', 'dqn/both', 'dqn/standard/xla')  # the bfloat16 rows: their options
    assert set(bench_rows.ROWS) == set(timed) | {'dqn/standard/bfloat16', 'dqn/both/bfloat16'}
    for name in timed:  # (tests/test_lever_bench_rows.py), the same measurement
        result = bench_rows.ROWS[name](settings)
        assert result['windows'] == 2  # one per period
        assert 0 < result['min'] <= result['median'] <= result['max']
        assert result['min'] <= result['steps_per_sec'] <= result['max']
    assert not [thread for thread in threading.enumerate() if thread.name.startswith('dqn-')]


@pytest.mark.slow
def test_a_diverging_run_stops_with_one_line_and_keeps_its_finite_checkpoints(
        tmp_path, finite_checkpoints, diverged_run):
    """200 steps at the preset's learning rate (checkpoints at 100 and 200), then the run
    resumed at 1e37: the first minibatches' loss overflows. The run stops with one line naming
    the update and the step, after the row that shows nan, and writes no checkpoint of the
    diverged weights: ckpt-200 stays the newest."""
    bindings = CARTPOLE_BINDINGS + ['DQNConfig.eval_every_steps = 0',
                                    'DQNConfig.checkpoint_every_steps = 100',
                                    'DQNConfig.log_every_seconds = 1e-6']
    first = _run('dqn_tf.main', _flags(bindings + ['DQNConfig.total_steps = 200']) +
                 ['--run_dir=run'], cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    result = _run('dqn_tf.main', _flags(bindings + ['DQNConfig.learning_rate = 1e37']) +
                  ['--run_dir=run'], cwd=tmp_path)
    error, _ = diverged_run(result, tmp_path / 'run')
    assert finite_checkpoints(tmp_path / 'run') == {100: True, 200: True}
    assert 'ckpt-200, stays' in error


def test_the_old_names_of_the_actors_are_read_as_their_names_now_with_a_notice(capsys):
    """The paper's "sampler threads" are actors here (docs/code_map.md, Words): a preset or
    binding with DQNConfig.num_samplers, sampler_envs or the older num_workers still works, each
    read as its name now with one line saying so."""
    preset = os.path.join(app.PROJECT_ROOT, 'gin', 'dqn', 'pong.gin')
    capsys.readouterr()
    config = dqn_main.configure([preset], ['DQNConfig.num_samplers = 2',
                                           "DQNConfig.sampler_envs = 'process'"])
    assert (config.num_actors, config.actor_envs) == (2, 'process')
    notices = capsys.readouterr().err.splitlines()
    assert notices == [
        "warning: DQNConfig.num_samplers (--gin_bindings='DQNConfig.num_samplers = 2') is read "
        'as DQNConfig.num_actors, its name now',
        "warning: DQNConfig.sampler_envs (--gin_bindings=\"DQNConfig.sampler_envs = 'process'\") "
        'is read as DQNConfig.actor_envs, its name now']
    assert dqn_main.configure([preset], ['DQNConfig.num_workers = 4']).num_actors == 4
