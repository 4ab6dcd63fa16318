"""`python -m dqn_tf.main` across sessions: the replay saved at a session's end is restored by the
next one instead of a refill; without a saved replay the run refills it."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from common.launch import app
from common.tools import run_files

# tests/dqn_tf/test_main.py's CartPole run, shorter: W = 2, C = 100, 100 steps prepopulated.
BINDINGS = [
    'DQNConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'",
    "DQNConfig.network = 'mlp'", 'DQNConfig.num_actors = 2', 'DQNConfig.target_period = 100',
    'DQNConfig.replay_capacity = 1000', 'DQNConfig.prepopulate_steps = 100',
    'DQNConfig.eval_every_steps = 0', 'DQNConfig.checkpoint_every_steps = 100',
    'DQNConfig.log_every_seconds = 0.01']


def _session(run_dir, total_steps):
    gin_file = os.path.join(app.PROJECT_ROOT, 'gin/dqn/pong.gin')
    bindings = BINDINGS + [f'DQNConfig.total_steps = {total_steps}']
    result = subprocess.run(
        [sys.executable, '-m', 'dqn_tf.main', f'--gin_file={gin_file}', f'--run_dir={run_dir}']
        + [f'--gin_bindings={binding}' for binding in bindings],
        env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT), capture_output=True, text=True,
        timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.slow
def test_a_resumed_run_restores_the_replay_saved_at_the_end_of_the_last_session(tmp_path):
    run_dir = tmp_path / 'run'
    replay_dir = run_dir / 'replay'
    first = _session(run_dir, 200)
    # 100 prepopulated steps and the 200 trained, the last period's staged ones included.
    assert f'replay saved to {replay_dir}: 300 steps of step 200' in first, first
    assert json.loads((replay_dir / 'replay.json').read_text())['env_steps'] == 200

    second = _session(run_dir, 300)
    assert 'resuming from' in second and 'at step 200' in second
    assert f'replay restored from {replay_dir}: 300 steps of step 200' in second, second
    assert 'refilled' not in second and 'prepopulating' not in second
    assert f'replay saved to {replay_dir}: 400 steps of step 300' in second
    # The second session trains on the restored 300 steps from its first row (a refill would
    # hold 100; the concurrent mode stages each period's steps until the period ends).
    rows = run_files.read_csv(run_dir / 'metrics.csv')
    resumed = [row for row in rows if int(row['env_steps']) > 200]
    assert int(resumed[0]['replay_size']) >= 300

    shutil.rmtree(replay_dir)
    third = _session(run_dir, 400)
    assert 'replay memory is refilled: no saved replay in' in third, third
    assert 'prepopulating 100 random steps' in third
    assert f'replay saved to {replay_dir}: ' in third and 'steps of step 400' in third
