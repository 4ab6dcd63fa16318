"""The CPU A3C baseline's optimizer state: shared RMSProp statistics and the update count go
into the checkpoint and come back on resume."""
import os

import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf

from common.envs import gym as gym_envs
from common.units import async_learners
from ga3c_tf import a3c_cpu
from ga3c_tf import config as config_lib
from ga3c_tf import learner as learner_lib


@pytest.mark.parametrize('inside', [True, False])
def test_shared_rmsprop_places_epsilon_as_configured(inside):
    """TF1's placement (inside the sqrt, the default) or tf.keras' (outside), as the learner's
    own RMSProp does for GA3C: GA3CConfig.rmsprop_epsilon_inside_sqrt reaches both."""
    shared = a3c_cpu.SharedParameters(3)
    try:
        shared.parameters[:] = [1.0, 2.0, 3.0]
        shared.mean_square[:] = [0.5, 0.0, 2.0]
        gradient = np.array([1.0, -2.0, 0.5], np.float32)
        shared.apply_rmsprop(gradient, learning_rate=0.1, decay=0.9, epsilon=0.1,
                             epsilon_inside_sqrt=inside)
        mean_square = 0.9 * np.array([0.5, 0.0, 2.0]) + 0.1 * gradient ** 2
        denominator = np.sqrt(mean_square + 0.1) if inside else np.sqrt(mean_square) + 0.1
        np.testing.assert_allclose(shared.mean_square, mean_square, rtol=1e-6)
        np.testing.assert_allclose(shared.parameters, [1.0, 2.0, 3.0] - 0.1 * gradient /
                                   denominator, rtol=1e-6)
    finally:
        shared.close(unlink=True)


def test_server_starts_from_the_state_and_writes_it_back(process_tree):
    config = config_lib.GA3CConfig(env_config=gym_envs.GymConfig('CartPole-v1'),
                                    network='mlp', num_agents=1, dynamic_settings=False)
    config.validate()
    learner = learner_lib.build_learner(config)
    size = a3c_cpu.num_parameters(learner)
    state = a3c_cpu.OptimizerState(size, learner.optimizer.initial_mean_square)
    np.testing.assert_array_equal(state.mean_square.numpy(), np.ones(size))  # TF1's start
    saved_mean_square = np.linspace(0.0, 1.0, size, dtype=np.float32)
    state.mean_square.assign(saved_mean_square)
    state.updates.assign(np.int64(41))
    before = process_tree.shm_entries()
    with a3c_cpu.A3CServer(config, learner) as fresh:
        np.testing.assert_array_equal(fresh.shared.mean_square, np.ones(size))
    with a3c_cpu.A3CServer(config, learner, state=state, start_steps=500) as server:
        np.testing.assert_array_equal(server.shared.mean_square, saved_mean_square)
        np.testing.assert_array_equal(
            server.shared.parameters,
            async_learners.flat_values(learner.model.trainable_variables))
        assert server.counts() == {'predictions': 0, 'updates': 41}
        # What agents would have done meanwhile: one update.
        server.shared.mean_square += 1.0
        server.shared.parameters -= 0.25
        server.counters[0, a3c_cpu.UPDATES] = 1
        server.pull_into_learner()
        np.testing.assert_array_equal(state.mean_square.numpy(), saved_mean_square + 1.0)
        assert int(state.updates.numpy()) == 42
        np.testing.assert_array_equal(
            async_learners.flat_values(learner.model.trainable_variables),
            server.shared.parameters)
    assert not process_tree.leaked_shm(before)
    assert isinstance(state.trackables()['rmsprop_mean_square'], tf.Variable)
