"""AccelConfig.overlap_learning and reuse_activations: the algorithms they fit take them; the
others are refused in one line before anything starts."""
import pytest

from accel_tf import config as config_lib
from accel_tf import sections
from common.envs import gym as gym_envs
from common.system import errors


def _config(**fields):
    return config_lib.AccelConfig(env_config=gym_envs.GymConfig('CartPole-v1'), network='mlp',
                                  num_workers=1, overlap_learning=True, **fields)


def test_a2c_takes_overlap_learning_and_a3c_is_refused():
    _config(algorithm='a2c', actor_critic=sections.ActorCriticConfig()).validate()
    with pytest.raises(errors.ConfigError, match=r"overlap_learning=True; algorithm='a3c' does "
                                                 r"not sample then learn \(allowed for: a2c, ppo\)"):
        _config(algorithm='a3c', num_actor_learners=2, actor_critic=sections.ActorCriticConfig(),
                async_learners=sections.AsyncLearnersConfig()).validate()


def _reuse_config(**fields):
    values = dict(env_config=gym_envs.GymConfig('CartPole-v1'), network='mlp', num_workers=1,
                  reuse_activations=True, algorithm='a2c',
                  actor_critic=sections.ActorCriticConfig())
    values.update(fields)
    return config_lib.AccelConfig(**values)


def test_a2c_takes_reuse_activations_and_ppo_or_an_overlapped_a2c_is_refused():
    """The update must train, once, the parameters that acted: A2C's; PPO's epochs do not."""
    _reuse_config().validate()
    with pytest.raises(errors.ConfigError, match=r"reuse_activations=True; algorithm='ppo' "
                                                 r'does not train once per rollout .*allowed '
                                                 r'for: a2c\)'):
        _reuse_config(algorithm='ppo', ppo=sections.PPOConfig(),
                      actor_critic=sections.ActorCriticConfig(gae_lambda=0.95)).validate()
    with pytest.raises(errors.ConfigError, match='reuse_activations=True cannot run with '
                                                 'overlap_learning=True'):
        _reuse_config(overlap_learning=True).validate()


@pytest.mark.parametrize('fields, named', [
    ({'actor_critic': sections.ActorCriticConfig(gae_lambda=0.95)}, 'gae_lambda=0.95'),
    ({'torso_kwargs': {'hidden_sizes': (8,), 'activation': 'elu'}}, "a torso activation 'elu'"),
])
def test_an_a2c_whose_update_cannot_take_the_acting_pass_is_refused_in_one_line(fields, named):
    with pytest.raises(errors.ConfigError, match=f'reuse_activations=True cannot run with {named}'):
        _reuse_config(**fields).validate()
