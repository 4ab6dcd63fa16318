"""What a new user's rough handling found holding, pinned so that it keeps holding: a gin binding
that holds Python code runs nothing, a run directory with non-ASCII characters trains and
resumes, and SIGTERM of GA3C saves a checkpoint and leaves no process behind."""
import os
import signal
import subprocess
import sys
import time

import pytest

from common.launch import app
from common.tools import run_files

ENV = dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)
PAAC_CARTPOLE = ['PAACConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'",
                 "PAACConfig.network = 'mlp'", 'PAACConfig.num_envs = 4',
                 'PAACConfig.num_workers = 1', "make_pool.kind = 'serial'",
                 'PAACConfig.log_every_seconds = 0.05']


def _command(paper, bindings, *extra):
    return ([sys.executable, '-m', f'{paper}_tf.main',
             f'--gin_file={os.path.join(app.PROJECT_ROOT, "gin", paper, "pong.gin")}'] +
            [f'--gin_bindings={binding}' for binding in bindings] + list(extra))


@pytest.mark.slow
def test_a_binding_holding_python_code_runs_nothing(tmp_path):
    code = "__import__('os').system('touch pwned')"
    result = subprocess.run(_command('paac', [f'PAACConfig.num_envs = {code}'], '--run_dir=run'),
                            cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('error: bad gin config'), result.stderr
    assert not (tmp_path / 'pwned').exists() and not (tmp_path / 'run').exists()


@pytest.mark.slow
def test_a_run_directory_with_non_ascii_characters_trains_and_resumes(tmp_path):
    run_dir = 'runs/pong-é-ρ-日本'
    for total in (40, 80):
        result = subprocess.run(
            _command('paac', PAAC_CARTPOLE + [f'PAACConfig.total_steps = {total}'],
                     f'--run_dir={run_dir}'),
            cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=240)
        assert result.returncode == 0, result.stderr[-3000:]
    assert 'resuming from' in result.stdout
    steps = [int(row['env_steps']) for row in run_files.read_csv(tmp_path / run_dir /
                                                                 'metrics.csv')]
    assert steps[-1] == 80 and steps == sorted(steps)


@pytest.mark.slow
def test_sigterm_of_ga3c_saves_a_checkpoint_and_leaves_no_process(tmp_path, process_tree):
    bindings = ['GA3CConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'",
                "GA3CConfig.network = 'mlp'", 'GA3CConfig.num_agents = 2',
                'GA3CConfig.dynamic_settings = False', 'GA3CConfig.total_steps = 1000000000',
                'GA3CConfig.log_every_seconds = 0.1']
    process = subprocess.Popen(_command('ga3c', bindings, '--run_dir=run'), cwd=tmp_path,
                               env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    metrics = tmp_path / 'run' / 'metrics.csv'
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not (
            metrics.exists() and any(int(row['env_steps']) > 0
                                     for row in run_files.read_csv(metrics))):
        assert process.poll() is None, process.communicate()[1][-3000:]
        time.sleep(0.1)
    children = process_tree.descendants(process.pid)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr[-3000:]
    assert stderr.strip().splitlines()[-1] == 'interrupted'
    assert any(name.endswith('.index') for name in os.listdir(tmp_path / 'run' / 'checkpoints'))
    assert children and process_tree.wait_for(lambda: not process_tree.alive(children), 15)
