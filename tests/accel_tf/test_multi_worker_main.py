"""`python -m accel_tf.main` (and `paac_tf.main`) on several machines, as two worker processes on
localhost (DistributeConfig 'multi_worker', --cluster and --task_index): one run directory
written by the chief, the run's steps counted whole, a resume that starts every worker from the
chief's checkpoint, and a killed worker ending the chief's run with a checkpoint and one line."""
import csv
import os
import signal
import subprocess
import sys

import pytest

from accel_tf import main as accel_main
from common.launch import app
from common.scale import cluster
from common.system import errors

BINDINGS = [
    'AccelConfig.env_config = @GymConfig()',
    "GymConfig.env_id = 'CartPole-v1'",
    "AccelConfig.network = 'mlp'",
    'AccelConfig.num_workers = 2',        # one environment process on each machine ...
    'AccelConfig.envs_per_worker = 2',    # ... of 2 simulators: 4 in the run
    'AccelConfig.horizon = 8',            # 32 steps of the run per update
    'AccelConfig.checkpoint_every_steps = 160',
    'AccelConfig.log_every_seconds = 0.01',
    "DistributeConfig.strategy = 'multi_worker'",
]
PRESET = os.path.join(app.PROJECT_ROOT, 'gin/accel/a2c_pong.gin')
PAAC_BINDINGS = [
    'PAACConfig.env_config = @GymConfig()',
    "GymConfig.env_id = 'CartPole-v1'",
    "PAACConfig.network = 'mlp'",
    'PAACConfig.num_envs = 4',
    'PAACConfig.num_workers = 2',
    'PAACConfig.checkpoint_every_steps = 200',
    'PAACConfig.log_every_seconds = 0.01',
    "DistributeConfig.strategy = 'multi_worker'",
]
RAINBOW_BINDINGS = BINDINGS[:3] + [
    "AccelConfig.torso_kwargs = {'hidden_sizes': (64, 64), 'activation': 'relu'}",
    'AccelConfig.num_workers = 2',        # one environment process on each machine ...
    'AccelConfig.envs_per_worker = 2',    # ... of 2 simulators: 4 in the run
    'AccelConfig.horizon = 4',            # 16 steps of the run per phase
    'QValueConfig.batch_size = 64',       # 32 from each worker's own replay
    'QValueConfig.updates_per_phase = 16',
    'QValueConfig.min_replay_steps = 512',
    'QValueConfig.replay_capacity = 50000',
    'QValueConfig.target_period = 500',
    'QValueConfig.epsilon_decay_steps = 10000',
    'QValueConfig.eval_every_steps = 800',
    'QValueConfig.eval_protocol = @EvalProtocol()',  # section 4.2's, made small:
    "EvalProtocol.base = 'stooke'",
    'EvalProtocol.steps = 600',
    'EvalProtocol.envs = 2',
    'AccelConfig.checkpoint_every_steps = 800',
    'AccelConfig.log_every_seconds = 0.01',
    "DistributeConfig.strategy = 'multi_worker'",
]
ENTRY_POINTS = {  # entry point (or 'rainbow': accel_tf.main): (preset, bindings, total steps)
    'accel_tf.main': (PRESET, BINDINGS, 'AccelConfig.total_steps'),
    'rainbow': (os.path.join(app.PROJECT_ROOT, 'gin/accel/rainbow_pong.gin'), RAINBOW_BINDINGS,
                'AccelConfig.total_steps'),
    'paac_tf.main': (os.path.join(app.PROJECT_ROOT, 'gin/paac/paper.gin'), PAAC_BINDINGS,
                     'PAACConfig.total_steps'),
}


def _start_workers(tmp_path, total_steps, module='accel_tf.main'):
    try:
        ports = cluster.free_ports(2)
    except OSError as error:
        pytest.skip(f'no free localhost port to bind: {error}')
    scratch = tmp_path / 'scratch'
    scratch.mkdir(exist_ok=True)
    # The non-chief's temporary run files go under scratch, to see that none are left.
    env = dict(os.environ, PYTHONPATH=app.PROJECT_ROOT, TMPDIR=str(scratch))
    preset, bindings, total_steps_binding = ENTRY_POINTS[module]
    module = 'accel_tf.main' if module == 'rainbow' else module
    flags = [f'--gin_file={preset}', '--run_dir=run',
             f'--cluster={",".join(f"localhost:{port}" for port in ports)}'] + [
        f'--gin_bindings={binding}' for binding in
        bindings + [f'{total_steps_binding} = {total_steps}']]
    return [subprocess.Popen([sys.executable, '-m', module, f'--task_index={index}']
                             + flags, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for index in range(2)]


def _finish(workers, timeout=600):
    try:
        return [worker.communicate(timeout=timeout) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()


def _metrics(tmp_path):
    path = tmp_path / 'run' / 'metrics.csv'
    if not path.exists():
        return []
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_two_workers_write_one_run_directory_and_resume_from_the_chief(tmp_path):
    workers = _start_workers(tmp_path, 320)
    outputs = _finish(workers)
    for worker, (_, stderr) in zip(workers, outputs):
        assert worker.returncode == 0, stderr[-3000:]
    assert 'multi_worker: machine 0 of 2' in outputs[0][0], outputs[0][0]
    assert 'the chief (localhost:' in outputs[1][0] and 'writes the run directory' in \
        outputs[1][0], outputs[1][0]
    run_dir = tmp_path / 'run'
    assert {'metrics.csv', 'episodes.csv', 'checkpoints', 'operative_config.gin'} <= \
        set(os.listdir(run_dir))
    assert 'ckpt-320.index' in os.listdir(run_dir / 'checkpoints')
    rows = _metrics(tmp_path)
    # Each update is the whole run's 4 x 8 steps, though each worker stepped 2 simulators.
    assert int(rows[-1]['env_steps']) == 320 and int(rows[-1]['updates']) == 10
    assert os.listdir(tmp_path / 'scratch') == []

    workers = _start_workers(tmp_path, 640)
    outputs = _finish(workers)
    for worker, (_, stderr) in zip(workers, outputs):
        assert worker.returncode == 0, stderr[-3000:]
    assert 'at step 320' in outputs[0][0], outputs[0][0]
    assert "machine 1 of 2: starting at step 320 with the chief's parameters" in outputs[1][0], \
        outputs[1][0]
    rows = _metrics(tmp_path)
    assert int(rows[-1]['env_steps']) == 640 and int(rows[-1]['updates']) == 20
    assert 'ckpt-640.index' in os.listdir(run_dir / 'checkpoints')
    assert os.listdir(tmp_path / 'scratch') == []


@pytest.mark.slow
def test_rainbow_on_two_workers_fills_one_replay_each_and_trains_in_step(tmp_path):
    """The Q-value family on several machines: each worker stores its own 2 simulators' steps
    in its own prioritized replay and trains on 32 of every 64-transition minibatch; the run
    counts steps, warm-up and updates as one machine with all 4 simulators would, and only the
    chief evaluates."""
    workers = _start_workers(tmp_path, 1600, 'rainbow')
    outputs = _finish(workers)
    for worker, (_, stderr) in zip(workers, outputs):
        assert worker.returncode == 0, stderr[-3000:]
    rows = _metrics(tmp_path)
    assert int(rows[-1]['env_steps']) == 1600
    # The run's replay holds 512 steps after its 32nd phase (256 in each worker's), which
    # trains: phases 32-100, 16 updates each, as in one process.
    assert int(rows[-1]['updates']) == (100 - 32 + 1) * 16
    # Each worker: 16 updates of 32 per 8 sampled steps, the configured ratio 64.
    assert float(rows[-1]['replay_ratio']) == pytest.approx(64.0)
    with open(tmp_path / 'run' / 'eval.csv', newline='') as f:
        assert [int(row['env_steps']) for row in csv.DictReader(f)] == [800, 1600]
    assert 'eval at step 800' in outputs[0][0] and 'eval at step' not in outputs[1][0]
    assert os.listdir(tmp_path / 'scratch') == []


@pytest.mark.slow
def test_a_killed_worker_ends_the_chiefs_run_with_a_checkpoint_and_one_line(tmp_path,
                                                                           process_tree, errors_in):
    """PAAC here: the same runner as A2C's, through its own entry point."""
    workers = _start_workers(tmp_path, 100_000_000, 'paac_tf.main')
    try:
        assert process_tree.wait_for(lambda: any(int(row['env_steps']) > 0
                                                 for row in _metrics(tmp_path)))
        trees = [process_tree.descendants(worker.pid) for worker in workers]
        os.kill(workers[1].pid, signal.SIGKILL)
        stdout, stderr = workers[0].communicate(timeout=60)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    assert workers[0].returncode == 1, stderr[-3000:]
    error_lines = errors_in(stderr)
    assert len(error_lines) == 1, stderr[-3000:]
    assert 'a peer machine of this multi-worker run is gone' in error_lines[0], error_lines[0]
    assert 'saved' in error_lines[0] and 'rerun the same command' in error_lines[0], error_lines[0]
    assert any(name.endswith('.index') for name in os.listdir(tmp_path / 'run' / 'checkpoints'))
    assert process_tree.wait_for(lambda: not process_tree.alive(trees[0] + trees[1]), 10)


def test_cluster_flags_are_checked_before_anything_starts(monkeypatch):
    monkeypatch.setenv('TF_CONFIG', '')
    config = accel_main.configure([PRESET], BINDINGS)
    with pytest.raises(errors.ConfigError, match="'multi_worker' needs --cluster and --task_index"):
        cluster.configure(config)
    with pytest.raises(errors.ConfigError, match='num_workers=2 does not split evenly over the 3 '
                                              'machines'):
        cluster.configure(config, ['a:1', 'b:2', 'c:3'], 0)
    assert cluster.configure(config, ['a:1', 'b:2'], 1) == (['a:1', 'b:2'], 1)
    config = accel_main.configure([PRESET], BINDINGS[:-1])
    with pytest.raises(errors.ConfigError, match='--cluster and --task_index need'):
        cluster.configure(config, ['a:1', 'b:2'], 1)


@pytest.mark.slow
def test_a_session_stop_is_refused_over_several_machines_before_anything_starts(tmp_path, errors_in):
    """Each worker would stop on its own count and episodes; the collectives need one step."""
    result = subprocess.run(
        [sys.executable, '-m', 'accel_tf.main', f'--gin_file={PRESET}', '--run_dir=run',
         '--cluster=localhost:1,localhost:2', '--task_index=0', '--stop_at_steps=320'] +
        [f'--gin_bindings={binding}' for binding in BINDINGS], cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT), capture_output=True, text=True,
        timeout=120)
    error_lines = errors_in(result.stderr)
    assert result.returncode == 2 and len(error_lines) == 1, result.stderr[-2000:]
    assert '--stop_at_steps/--stop_at_score' in error_lines[0]
    assert 'several machines' in error_lines[0]
    assert not (tmp_path / 'run').exists()
