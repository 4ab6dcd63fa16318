"""AccelConfig.overlap_learning: the on-policy algorithms take it; the others are refused in one
line before anything starts."""
import pytest

from accel_tf import config as config_lib
from accel_tf import sections
from common.envs import gym as gym_envs
from common.run import errors


def _config(**fields):
    return config_lib.AccelConfig(env_config=gym_envs.GymConfig('CartPole-v1'), network='mlp',
                                  num_workers=1, overlap_learning=True, **fields)


def test_a2c_takes_overlap_learning_and_a3c_is_refused():
    _config(algorithm='a2c', actor_critic=sections.ActorCriticConfig()).validate()
    with pytest.raises(errors.ConfigError, match=r"overlap_learning=True; algorithm='a3c' does "
                                                 r"not sample then learn \(allowed for: a2c, ppo\)"):
        _config(algorithm='a3c', num_learners=2, actor_critic=sections.ActorCriticConfig(),
                async_learners=sections.AsyncLearnersConfig()).validate()
