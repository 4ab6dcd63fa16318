"""Ctrl-C during an overlapped PAAC run (PAACConfig.overlap_learning: each update on a thread
while the workers collect the next rollout): the run stops with 'interrupted', a non-zero exit,
its worker processes and shared memory gone, and a checkpoint that holds every update it
counted (the update in flight finishes before the save); the same command resumes it."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from common.launch import app
from common.tools import run_files

BINDINGS = [
    'PAACConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'",
    "PAACConfig.network = 'mlp'", 'PAACConfig.num_envs = 4', 'PAACConfig.num_workers = 2',
    'PAACConfig.horizon = 5', 'PAACConfig.overlap_learning = True',
    'PAACConfig.checkpoint_every_steps = 100000', 'PAACConfig.log_every_seconds = 0.2']
BATCH = 4 * 5


def _command(total_steps):
    return [sys.executable, '-m', 'paac_tf.main', '--run_dir=run',
            f"--gin_file={os.path.join(app.PROJECT_ROOT, 'gin/paac/paper.gin')}"] + [
        f'--gin_bindings={binding}' for binding in BINDINGS + [
            f'PAACConfig.total_steps = {total_steps}']]


def _updates_saved(run_dir):
    reader = tf.train.load_checkpoint(str(run_dir / 'checkpoints'))
    return int(reader.get_tensor('optimizer/iterations/.ATTRIBUTES/VARIABLE_VALUE'))


@pytest.mark.slow
def test_ctrl_c_saves_every_counted_update_and_leaves_nothing_behind(tmp_path, process_tree):
    shm_before = process_tree.shm_entries()
    env = dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)
    process = subprocess.Popen(_command(100_000_000), cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    metrics = tmp_path / 'run' / 'metrics.csv'
    workers = set()

    def progressed():
        workers.update(process_tree.spawned_children(process.pid))
        rows = run_files.read_csv(metrics) if metrics.exists() else []
        return bool(rows) and int(rows[-1]['env_steps']) > 400

    assert process_tree.wait_for(progressed, 180)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode != 0 and stderr.strip() == 'interrupted', stderr[-3000:]
    saved = int(re.search(r'interrupted at step ([\d,]+); saved', stdout).group(1).replace(
        ',', ''))
    # Every counted rollout's update is in the checkpoint; an interrupt between an update's
    # start and its rollout's count can add that one.
    assert _updates_saved(tmp_path / 'run') in (saved // BATCH, saved // BATCH + 1)
    assert len(workers) == 2
    assert process_tree.wait_for(lambda: not process_tree.alive(workers), 15)
    assert not process_tree.leaked_shm(shm_before)
    start = time.monotonic()
    resumed = subprocess.run(_command(saved + 200), cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=240)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f'at step {saved:,}' in resumed.stdout, resumed.stdout[-2000:]
    assert _updates_saved(tmp_path / 'run') >= saved // BATCH + 200 // BATCH
    print(f'resumed and finished in {time.monotonic() - start:.1f} s')
