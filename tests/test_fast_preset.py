"""gin/fast/pong.gin, the time-to-score preset: the authors'-code PPO preset with 2 epochs, 8
minibatches, entropy coefficient 0.003, rl_games' recipe (a KL-adaptive learning rate in place of
the linear decay, standardized value targets and observations, ratio clip 0.2), the torso in
the machine's native dtype (bfloat16 where the CPU or GPU runs it natively) and the frames its runs were timed on (every second pixel), nothing else changed (its
comment cites the measurements that chose those)."""
import dataclasses
import os

import pytest

from accel_tf import main
from common.launch import app
from common.system import native_dtype


def _config(name):
    return main.configure([os.path.join(app.PROJECT_ROOT, 'gin', name)], [])


@pytest.mark.parametrize('native', ['bfloat16', 'float32'])
def test_fast_pong_preset_is_the_authors_ppo_with_its_named_changes(native, monkeypatch):
    monkeypatch.setattr(native_dtype, 'native_dtype', lambda: (native, 'faked'))
    fast = _config('fast/pong.gin')
    assert fast.asked['compute_dtype'] == 'auto'
    original = _config('accel/ppo_original_code_pong.gin')
    assert fast.algorithm == 'ppo'
    assert (fast.ppo.epochs, fast.ppo.minibatches) == (2, 8)
    assert (original.ppo.epochs, original.ppo.minibatches) == (4, 4)
    assert fast.actor_critic.entropy_coef == 0.003 and original.actor_critic.entropy_coef == 0.01
    assert (fast.env_config.downsample, original.env_config.downsample) == ('skip', 'average')
    rl_games = (fast.ppo.kl_target, fast.ppo.normalize_values, fast.ppo.normalize_observations,
                fast.ppo.ratio_clip, fast.anneal_learning_rate)
    assert rl_games == (0.01, True, True, 0.2, False)
    assert (original.ppo.kl_target, original.ppo.ratio_clip) == (0.0, 0.1)
    assert (fast.compute_dtype, original.compute_dtype) == (native, 'float32')
    assert dataclasses.replace(
        fast, anneal_learning_rate=True, compute_dtype='float32',
        ppo=dataclasses.replace(fast.ppo, epochs=4, minibatches=4, kl_target=0.0,
                                normalize_values=False, normalize_observations=False,
                                ratio_clip=0.1),
        actor_critic=dataclasses.replace(fast.actor_critic, entropy_coef=0.01),
        env_config=dataclasses.replace(fast.env_config, downsample='average')) == original
