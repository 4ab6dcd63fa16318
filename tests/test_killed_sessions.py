"""A session killed before its first checkpoint (SIGKILL of the main process: a crash, the OOM
killer, a lost machine) never mixes its rows with the next session's, for every paper's entry
point: the next session starts at step 0 and sets the killed sessions' rows aside as superseded,
so metrics.csv and episodes.csv hold one history. The kill leaves no process and no segment,
and nothing of the other processes' endings (multiprocessing's resource tracker's 'leaked
shared_memory objects') reaches the terminal."""
import os
import shutil
import signal
import subprocess
import time

import pytest

from common.launch import app
from common.tools import run_files

PAPERS = ('accel', 'dqn', 'ga3c', 'paac')  # tests/conftest.py TINY_CARTPOLE


def _command(cartpole_command, paper, total_steps, extra=()):
    return cartpole_command(paper, [f'{{config}}.total_steps = {total_steps}'],
                            ['--run_dir=run'] + list(extra))


def _data_rows(path):
    return len(run_files.read_csv(path)) if os.path.exists(path) else 0


@pytest.mark.slow
@pytest.mark.parametrize('paper', PAPERS)
def test_sessions_killed_before_their_first_checkpoint_are_set_aside(paper, tmp_path,
                                                                      process_tree,
                                                                      cartpole_command):
    env = dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)
    metrics = tmp_path / 'run' / 'metrics.csv'
    shm_before = process_tree.shm_entries()
    for session in range(2):
        before = _data_rows(metrics)
        stderr = tmp_path / f'stderr-{session}.txt'
        with open(stderr, 'w') as terminal:  # what every process of the run writes there
            process = subprocess.Popen(_command(cartpole_command, paper, 10 ** 9),
                                       cwd=tmp_path, env=env,
                                       stdout=subprocess.DEVNULL, stderr=terminal)
        deadline = time.monotonic() + 180
        while _data_rows(metrics) < before + 2 and time.monotonic() < deadline:
            assert process.poll() is None, f'{paper} ended before it was killed'
            time.sleep(0.05)
        children = process_tree.descendants(process.pid)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        assert process_tree.wait_for(lambda: not process_tree.alive(children), 30)
        assert not os.listdir(tmp_path / 'run' / 'checkpoints') if (
            tmp_path / 'run' / 'checkpoints').exists() else True
        assert not process_tree.leaked_shm(shm_before)
        time.sleep(1)  # the resource tracker's own ending, after its last holder's
        written = stderr.read_text()
        assert 'leaked' not in written and 'Traceback' not in written, written
    # The second session set the first one's rows aside as it started; both sessions' rows
    # end aside once the clean session starts.
    killed_rows = _data_rows(metrics) + _data_rows(tmp_path / 'run' / 'metrics.superseded.csv')
    assert killed_rows >= 4
    clean = subprocess.run(_command(cartpole_command, paper, 10 ** 9, ['--stop_at_steps=64']),
                           cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=240)
    assert clean.returncode == 0, clean.stderr[-3000:]
    assert 'no checkpoint in run: starting at step 0' in clean.stdout
    steps = [int(row['env_steps']) for row in run_files.read_csv(metrics)]
    # One history: never falling back (GA3C logs rows at step 0 while its agents start).
    assert steps == sorted(steps) and steps[-1] >= 64 and steps.count(steps[-1]) == 1, steps
    episodes = [int(row['env_steps']) for row in
                run_files.read_csv(tmp_path / 'run' / 'episodes.csv')]
    assert episodes == sorted(episodes)
    superseded = run_files.read_csv(tmp_path / 'run' / 'metrics.superseded.csv')
    assert len(superseded) == killed_rows  # the killed sessions' rows, kept aside


@pytest.mark.slow
def test_a_run_whose_checkpoints_are_gone_is_refused_not_started_over(tmp_path,
                                                                      cartpole_command):
    """A run that saved checkpoints and lost them (deleted, not copied with the run) shows
    progress no checkpoint holds: the command refuses it in one line and writes nothing, where it
    used to start at step 0 and set the whole curve aside."""
    env = dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)
    first = subprocess.run(
        _command(cartpole_command, 'paac', 10 ** 9, ['--stop_at_steps=256']) +
        ['--gin_bindings=PAACConfig.checkpoint_every_steps = 64'],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert first.returncode == 0, first.stderr[-3000:]
    run_dir = tmp_path / 'run'
    shutil.rmtree(run_dir / 'checkpoints')
    before = {path.name: path.read_bytes() for path in run_dir.iterdir()}
    again = subprocess.run(
        _command(cartpole_command, 'paac', 10 ** 9, ['--stop_at_steps=512']) +
        ['--gin_bindings=PAACConfig.checkpoint_every_steps = 64'],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert again.returncode == 2 and again.stderr.count('\n') == 1, again.stderr[-3000:]
    assert 'run holds a run\'s progress (rows to step ' in again.stderr
    assert 'but no checkpoint to go on from (run/checkpoints is missing)' in again.stderr
    assert {path.name: path.read_bytes() for path in run_dir.iterdir()} == before
