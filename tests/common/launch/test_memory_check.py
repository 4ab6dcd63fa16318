"""A config whose memory would not fit the machine is refused in one line before anything
starts, naming the estimate, what is available and the knob; --skip_memory_check goes on."""
import os
import subprocess
import sys

from absl import flags
import pytest

from common.launch import app
from common.launch import memory_check
from common.system import errors
from paac_tf import main as paac_main

GIB = 1 << 30


def _paac(*bindings):
    return paac_main.configure([os.path.join(app.PROJECT_ROOT, 'gin', 'paac', 'pong.gin')],
                               list(bindings))


def test_estimates_add_up_the_parts_and_refuse_past_the_available_memory():
    needs = paac_main.memory(_paac())
    # 800 MiB TensorFlow, 8 x 80 MiB workers, 32 x (1 MiB + 2 x 84*84*4) emulators, 6 x 32 frames
    frame = 84 * 84 * 4
    assert sum(need.bytes for need in needs) == (800 << 20) + 8 * (80 << 20) + \
        32 * ((1 << 20) + 2 * frame) + 6 * 32 * frame
    memory_check.check(needs, available=2 * GIB)  # fits: nothing raised
    typo = paac_main.memory(_paac('PAACConfig.num_envs = 100000', 'PAACConfig.num_workers = 8'))
    with pytest.raises(errors.ConfigError) as raised:
        memory_check.check(typo, available=24 * GIB)
    message = str(raised.value)
    assert '\n' not in message
    # 100,000 x (1 MiB + 2 x 28,224 B) = 102.9 GiB; rollout 6 x 100,000 x 28,224 B = 15.8 GiB;
    # 0.78 GiB TensorFlow, 0.63 GiB workers: 120.1 GiB.
    assert message.startswith('this config needs about 120.1 GiB of memory (100,000 emulators: '
                              '102.9 GiB (PAACConfig.num_envs); the rollout: 15.8 GiB '
                              '(PAACConfig.num_envs); the TensorFlow process: 0.8 GiB)')
    assert '24.0 GiB available; lower PAACConfig.num_envs, or pass --skip_memory_check' in message


def test_replay_is_counted_a_frame_per_step():
    from dqn_tf import main as dqn_main  # pylint: disable=import-outside-toplevel
    config = dqn_main.configure([os.path.join(app.PROJECT_ROOT, 'gin', 'dqn', 'pong.gin')], [])
    (replay,) = [need for need in dqn_main.memory(config)
                 if need.knob == 'DQNConfig.replay_capacity']
    assert replay.bytes == 1_000_000 * (84 * 84 + memory_check.ITEM_BYTES)


def test_the_flag_skips_the_check(monkeypatch):
    memory_check.define_flags()
    needs = [memory_check.Need('a replay', 10 * GIB, 'X.replay_capacity')]
    monkeypatch.setattr(memory_check, 'available_bytes', lambda: GIB)
    with pytest.raises(errors.ConfigError, match='lower X.replay_capacity'):
        memory_check.check_flags(needs)
    monkeypatch.setattr(flags.FLAGS['skip_memory_check'], 'value', True)
    memory_check.check_flags(needs)


@pytest.mark.slow
def test_an_entry_point_refuses_before_anything_starts(tmp_path):
    result = subprocess.run(
        [sys.executable, '-m', 'paac_tf.main',
         f'--gin_file={os.path.join(app.PROJECT_ROOT, "gin", "paac", "pong.gin")}',
         '--gin_bindings=PAACConfig.num_envs = 10000000', '--run_dir=run'],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT), capture_output=True,
        text=True, timeout=120)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and '10,000,000 emulators' in lines[0]
    assert 'lower PAACConfig.num_envs' in lines[0]
    assert not (tmp_path / 'run').exists()
