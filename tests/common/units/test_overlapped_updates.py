"""OnPolicyUnit(overlap=True): each update runs on a thread while the next rollout is collected
with the acting copy of the parameters from before it (a policy lag of one update); a failing
update ends the next iteration with its error; finish() leaves no thread."""
import threading

import numpy as np
import pytest

from common.envs import gym as gym_envs
from common.envs import pools
from common.learners import actor_critic
from common.learners import networks
from common.learners import optim
from common.units import on_policy
from common.units import samplers

ENV = gym_envs.GymConfig('CartPole-v1')


def _learner(acting=True):
    def make_model():
        return networks.actor_critic_for(ENV, 'mlp', seed=0, torso_kwargs={'hidden_sizes': (8,)})

    settings = actor_critic.LossSettings(gamma=0.99, entropy_coef=0.01, value_loss_coef=0.5)
    return actor_critic.ActorCriticLearner(
        make_model(), optim.Adam(1e-2), settings, actor_critic.observation_spec(ENV), seed=0,
        horizon=5, acting_model=make_model() if acting else None)


def _weights(model):
    return [variable.numpy().copy() for variable in model.trainable_variables]


def _same(first, second):
    return all(np.array_equal(a, b) for a, b in zip(first, second))


def test_each_rollout_is_collected_one_update_behind_the_parameters_it_trains():
    learner = _learner()
    with pools.SerialPool(ENV, 4, seed=0) as pool:
        unit = on_policy.OnPolicyUnit(samplers.make_sampler('synchronized', pool, 5), learner,
                                      overlap=True)
        start = _weights(learner.model)
        acted_with = []
        real_policy = unit.policy

        def policy(observations):
            acted_with.append(_weights(learner.acting_model))
            return real_policy(observations)

        unit.policy = policy
        unit.iterate()  # collects with the start, starts update 1
        unit.settle()
        after_first = _weights(learner.model)
        assert not _same(after_first, start)
        unit.iterate()  # collects with the start (update 1 was in flight), starts update 2
        unit.iterate()  # collects with the parameters after update 1, starts update 3
        unit.finish()
    assert all(_same(weights, start) for weights in acted_with[:10])
    assert all(_same(weights, after_first) for weights in acted_with[10:])
    assert int(learner.optimizer.iterations.numpy()) == 3
    assert not _same(_weights(learner.model), _weights(learner.acting_model))
    assert not any(thread.name.startswith('update') for thread in threading.enumerate())


def test_a_failing_update_ends_the_next_iteration_with_its_error():
    learner = _learner()
    calls = []
    real_train = learner.train_on_rollout

    def train(*arrays):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError('update diverged')
        return real_train(*arrays)

    learner.train_on_rollout = train
    with pools.SerialPool(ENV, 4, seed=0) as pool:
        unit = on_policy.OnPolicyUnit(samplers.make_sampler('synchronized', pool, 5), learner,
                                      overlap=True)
        unit.iterate()
        unit.iterate()
        with pytest.raises(RuntimeError, match='update diverged'):
            unit.iterate()
        unit.finish()
    assert not any(thread.name.startswith('update') for thread in threading.enumerate())


def test_overlap_needs_an_acting_model():
    with pools.SerialPool(ENV, 2, seed=0) as pool:
        with pytest.raises(ValueError, match='overlap=True needs a learner built with an'):
            on_policy.OnPolicyUnit(samplers.make_sampler('synchronized', pool, 5),
                                   _learner(acting=False), overlap=True)
