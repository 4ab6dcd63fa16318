"""Tiny trained runs for the tests of the commands that read one (watch, export, results), each
made once per test module by the public entry point, as a user's run directory is; and an
NVIDIA driver faked on this machine (the device tests and the doctor's)."""
import os
import subprocess
import sys

import pytest

from common.launch import app

# An A2C run (Stooke & Abbeel's preset) of 256 steps on CartPole with a 16-unit network, as
# tests/fixtures/make_checkpoints.py makes its accel_a2c fixture: about 7 s.
CARTPOLE_A2C = [
    'AccelConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'",
    "AccelConfig.network = 'mlp'", "AccelConfig.torso_kwargs = {'hidden_sizes': (16,)}",
    'AccelConfig.num_workers = 1', 'AccelConfig.envs_per_worker = 4', 'AccelConfig.horizon = 8',
    'AccelConfig.log_every_seconds = 1.0', 'AccelConfig.checkpoint_every_steps = 100000',
    'AccelConfig.total_steps = 256']
# The same on Pong (104x80x4 uint8 frames) with the small nips network, for 20 steps: the
# Atari path of the commands, untrained.
PONG_A2C = [
    "AccelConfig.network = 'nips'", 'AccelConfig.num_workers = 1',
    'AccelConfig.envs_per_worker = 2', 'AccelConfig.horizon = 5',
    'AccelConfig.log_every_seconds = 1.0', 'AccelConfig.checkpoint_every_steps = 100000',
    'AccelConfig.total_steps = 20']


def train_tiny_run(run_dir, bindings, gin_file='gin/accel/a2c_pong.gin'):
    """Trains a run by `python -m accel_tf.main` into run_dir; returns run_dir as a str."""
    command = [sys.executable, '-m', 'accel_tf.main', f'--gin_file={gin_file}'] + [
        f'--gin_bindings={binding}' for binding in bindings] + [f'--run_dir={run_dir}']
    result = subprocess.run(command, cwd=app.PROJECT_ROOT, capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return str(run_dir)


@pytest.fixture(scope='module')
def cartpole_run(tmp_path_factory):
    """A CartPole A2C run directory with one checkpoint (step 256)."""
    return train_tiny_run(tmp_path_factory.mktemp('cartpole') / 'run', CARTPOLE_A2C)


@pytest.fixture(scope='module')
def pong_run(tmp_path_factory):
    """A Pong A2C run directory (nips network) with one checkpoint (step 20)."""
    return train_tiny_run(tmp_path_factory.mktemp('pong') / 'run', PONG_A2C)


@pytest.fixture
def fake_driver(tmp_path, monkeypatch):
    """fake(version_line): an NVIDIA driver on this machine, its /proc file faked to hold
    version_line, nvidia-smi not on PATH; returns the file's path."""
    from common.system import devices  # pylint: disable=import-outside-toplevel

    def fake(version_line):
        version = tmp_path / 'version'
        version.write_text(version_line)
        monkeypatch.setattr(devices, 'DRIVER_FILE', str(version))
        monkeypatch.setattr(devices.shutil, 'which', lambda name: None)
        return str(version)
    return fake
