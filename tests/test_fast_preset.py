"""gin/fast/pong.gin, the time-to-score preset: the authors'-code PPO preset with 2 epochs
and nothing else changed (its comment cites the measurement that chose that)."""
import dataclasses
import os

from accel_tf import main
from common.run import app


def _config(name):
    return main.configure([os.path.join(app.PROJECT_ROOT, 'gin', name)], [])


def test_fast_pong_preset_is_the_authors_ppo_with_two_epochs():
    fast = _config('fast/pong.gin')
    original = _config('accel/ppo_original_code_pong.gin')
    assert fast.algorithm == 'ppo'
    assert fast.ppo.epochs == 2 and original.ppo.epochs == 4
    assert dataclasses.replace(fast, ppo=dataclasses.replace(fast.ppo, epochs=4)) == original
