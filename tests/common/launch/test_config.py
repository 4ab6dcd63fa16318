"""RunConfig and RMSPropConfig: the fields every paper's config shares, checked once."""
import dataclasses

import common  # noqa: F401
import gin
import pytest

from common.envs import gym as gym_envs
from common.launch import config as config_lib
from common.learners import optim
from common.system import errors


@dataclasses.dataclass
class ToyConfig(config_lib.RMSPropConfig, config_lib.RunConfig):
    env_config: object = None
    total_steps: int = 100
    width: int = 3

    def validate(self):
        super().validate()
        self.validate_rmsprop()
        self.require_positive(('width',))


def _toy(**overrides):
    return ToyConfig(**{'env_config': gym_envs.GymConfig('CartPole-v1'), **overrides})


def test_a_valid_config_passes_and_knows_its_owner():
    config = _toy()
    config.validate()
    assert config.owner == 'ToyConfig'
    optimizer = optim.rmsprop_of(config, 0.01)
    assert (optimizer.decay, optimizer.epsilon, optimizer.epsilon_inside_sqrt,
            optimizer.initial_mean_square) == (0.99, 0.1, True, 1.0)


@pytest.mark.parametrize('overrides, named', [
    (dict(gamma='0.99'), "ToyConfig.gamma='0.99' must be a number"),
    (dict(total_steps=0), 'ToyConfig.total_steps must be a positive integer'),
    (dict(gamma=1.5), 'ToyConfig.gamma must be in (0, 1]'),
    (dict(seed=-1), 'ToyConfig.seed must be >= 0'),
    (dict(log_every_seconds=0.0), 'ToyConfig.log_every_seconds must be > 0'),
    (dict(checkpoint_every_steps=0), 'ToyConfig.checkpoint_every_steps'),
    (dict(env_config=3), 'ToyConfig.env_config must be @AtariConfig() or @GymConfig()'),
    (dict(learning_rate=0.0), 'ToyConfig.learning_rate must be > 0'),
    (dict(rmsprop_decay=1.0), 'ToyConfig.rmsprop_decay must be in (0, 1)'),
    (dict(rmsprop_initial_mean_square=-1.0), 'rmsprop_initial_mean_square must be >= 0'),
    (dict(rmsprop_epsilon_inside_sqrt=1), 'rmsprop_epsilon_inside_sqrt=1 must be True or False'),
    (dict(width=0), 'ToyConfig.width must be > 0'),
])
def test_shared_fields_are_checked_for_type_then_range(overrides, named):
    with pytest.raises(errors.ConfigError) as raised:
        _toy(**overrides).validate()
    assert named in str(raised.value)


def test_renamed_bindings_point_at_the_config():
    renamed = config_lib.renamed_bindings('ToyConfig')
    assert renamed['RMSProp.epsilon'] == 'bind ToyConfig.rmsprop_epsilon instead'
    assert renamed['RMSProp.initial_mean_square'] == (
        'bind ToyConfig.rmsprop_initial_mean_square instead')
    gin.clear_config()


def test_each_mirrored_replica_gets_the_sampler_groups_of_its_own():
    mirrored = config_lib.DistributeConfig(strategy='mirrored', num_replicas=2)
    groups = {(sampler, name): config_lib.sampler_groups(sampler, distribute_config)
              for sampler in ('synchronized', 'alternating')
              for name, distribute_config in (('none', None), ('mirrored', mirrored), (
                  'multi_worker', config_lib.DistributeConfig(strategy='multi_worker')))}
    assert groups == {('synchronized', 'none'): 1, ('alternating', 'none'): 2,
                      ('synchronized', 'mirrored'): 2, ('alternating', 'mirrored'): 4,
                      ('synchronized', 'multi_worker'): 1, ('alternating', 'multi_worker'): 2}
    config_lib.require_sampler_groups('PAACConfig', 'alternating', 8, mirrored)
    with pytest.raises(errors.ConfigError, match=r"PAACConfig.sampler='alternating' needs an even "
                                              r'num_workers \(two groups\), got 3'):
        config_lib.require_sampler_groups('PAACConfig', 'alternating', 3, None)
    with pytest.raises(errors.ConfigError, match=r'PAACConfig.num_workers=6 does not split into 4 '
                                              r'sampler groups \(2 per replica'):
        config_lib.require_sampler_groups('PAACConfig', 'alternating', 6, mirrored)


def test_sampler_groups_of_a_pool_without_worker_processes_ignore_num_workers():
    # ale_py's vector env splits its environments into the groups; num_workers is unused there.
    gin.clear_config()
    try:
        gin.bind_parameter('make_pool.kind', 'ale_vector')
        config_lib.require_sampler_groups('PAACConfig', 'alternating', 3, None)
    finally:
        gin.clear_config()
    with pytest.raises(errors.ConfigError, match='got 3'):
        config_lib.require_sampler_groups('PAACConfig', 'alternating', 3, None)


@pytest.mark.parametrize('cores, num_envs, groups, expected', [
    (2, 32, 1, 2), (8, 32, 1, 8), (6, 32, 1, 4), (64, 32, 1, 32), (1, 32, 1, 1),
    (1, 32, 2, 2), (3, 32, 2, 2), (12, 32, 2, 8), (5, 30, 1, 5), (7, 30, 2, 6)])
def test_auto_workers_is_the_most_that_fit_the_cores_and_split_the_environments(
        cores, num_envs, groups, expected):
    workers = config_lib.resolve_num_workers('PAACConfig', 'auto', num_envs, groups, cores=cores)
    assert workers == expected
    assert num_envs % workers == 0 and workers % groups == 0


@pytest.mark.parametrize('value', ['many', 0, -2, 2.0, True])
def test_num_workers_other_than_a_positive_int_or_auto_is_named(value):
    with pytest.raises(errors.ConfigError, match=r"PAACConfig.num_workers must be a positive "
                                              r"integer or 'auto'"):
        config_lib.resolve_num_workers("PAACConfig", value, 32)
