"""Fast DQN: the loss against tf-agents, the four modes, determinism, threads, CartPole learning."""
import concurrent.futures
import os
import sys
import threading

import gin
import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf
from tf_agents.agents.dqn import dqn_agent
from tf_agents.networks import network
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts
from tf_agents.utils import common as tfa_common

from common import evaluate
from common.envs import gym as gym_envs
from common.system import errors
from dqn_tf import config as config_lib
from dqn_tf import dqn
from dqn_tf import trainer as trainer_lib


def _cartpole_config(**overrides):
    values = dict(env_config=gym_envs.GymConfig('CartPole-v1'), num_actors=2, total_steps=2000,
                  batch_size=32, replay_capacity=10_000, target_period=200, train_period=4,
                  prepopulate_steps=200, network='mlp', epsilon_decay_steps=1000,
                  eval_every_steps=0, seed=3)
    values.update(overrides)
    config = config_lib.DQNConfig(**values)
    config.validate()
    return config


class _KerasQNetwork(network.Network):
    """Our Keras Q model behind tf-agents' Network interface, so DqnAgent can compute its loss."""

    def __init__(self, model, observation_spec):
        super().__init__(input_tensor_spec=observation_spec, state_spec=(), name='keras_q')
        self._model = model

    def call(self, observation, step_type=None, network_state=(), training=False):
        return self._model(observation), network_state


@pytest.mark.parametrize('double_dqn', [False, True])
def test_loss_matches_tf_agents_dqn_agent(double_dqn, tf_agents_transitions):
    config = _cartpole_config(double_dqn=double_dqn, gamma=0.97)
    learner = dqn.build_learner(config)
    # Make online and target differ, as they do between target updates.
    for variable in learner.online.trainable_variables:
        variable.assign_add(tf.random.stateless_normal(variable.shape, seed=[1, 2]) * 0.1)
    rng = np.random.default_rng(0)
    batch = 16
    observations = rng.normal(size=(batch, 4)).astype(np.float32)
    next_observations = rng.normal(size=(batch, 4)).astype(np.float32)
    actions = rng.integers(0, 2, batch).astype(np.int32)
    rewards = rng.normal(size=batch).astype(np.float32) * 3  # beyond the Huber kink too
    terminals = (rng.random(batch) < 0.3).astype(np.float32)
    ours = learner.loss(observations, actions, rewards, next_observations, terminals).loss

    observation_spec = tf.TensorSpec((4,), tf.float32)
    agent_class = dqn_agent.DdqnAgent if double_dqn else dqn_agent.DqnAgent
    agent = agent_class(
        ts.time_step_spec(observation_spec),
        tensor_spec.BoundedTensorSpec((), tf.int32, 0, 1),
        q_network=_KerasQNetwork(learner.online, observation_spec),
        target_q_network=_KerasQNetwork(learner.target, observation_spec),
        optimizer=tf.compat.v1.train.GradientDescentOptimizer(0.0),
        td_errors_loss_fn=tfa_common.element_wise_huber_loss, gamma=0.97)
    experience = tf_agents_transitions(observations, actions, rewards, next_observations,
                                       terminals)
    oracle = agent._loss(experience, td_errors_loss_fn=tfa_common.element_wise_huber_loss,
                         gamma=0.97)
    np.testing.assert_allclose(ours.numpy(), oracle.loss.numpy(), rtol=1e-5)


def test_train_step_traces_once_and_update_target_copies_the_online_network():
    config = _cartpole_config()
    learner = dqn.build_learner(config)
    rng = np.random.default_rng(0)
    before = [variable.numpy().copy() for variable in learner.online.trainable_variables]
    for batch in (32, 7, 32):
        learner.train_step(rng.normal(size=(batch, 4)).astype(np.float32),
                           np.zeros(batch, np.int32), np.ones(batch, np.float32),
                           rng.normal(size=(batch, 4)).astype(np.float32),
                           np.zeros(batch, np.float32))
    assert learner.train_step.experimental_get_tracing_count() == 1
    assert int(learner.optimizer.iterations.numpy()) == 3
    after = [variable.numpy() for variable in learner.online.trainable_variables]
    assert any(np.abs(b - a).max() > 0 for b, a in zip(before, after))
    targets = [variable.numpy() for variable in learner.target.trainable_variables]
    assert any(np.abs(t - a).max() > 0 for t, a in zip(targets, after))
    learner.update_target()
    for target, online in zip(learner.target.variables, learner.online.variables):
        np.testing.assert_array_equal(target.numpy(), online.numpy())


def test_train_steps_on_a_stack_equals_one_train_step_per_minibatch():
    """The concurrent trainer's graph loop makes the same updates, in order, as K calls."""
    config = _cartpole_config()
    looped, single = dqn.build_learner(config), dqn.build_learner(config)
    for source, destination in ((looped.online, single.online), (looped.target, single.target)):
        for from_variable, to_variable in zip(source.variables, destination.variables):
            to_variable.assign(from_variable)
    rng = np.random.default_rng(5)
    num_minibatches, batch = 3, 8
    stack = (rng.normal(size=(num_minibatches, batch, 4)).astype(np.float32),
             rng.integers(0, 2, (num_minibatches, batch)).astype(np.int32),
             rng.normal(size=(num_minibatches, batch)).astype(np.float32),
             rng.normal(size=(num_minibatches, batch, 4)).astype(np.float32),
             (rng.random((num_minibatches, batch)) < 0.3).astype(np.float32))
    td_errors = looped.train_steps(*stack)
    for index in range(num_minibatches):
        np.testing.assert_allclose(td_errors[index], single.train_step(
            *(field[index] for field in stack)), rtol=1e-5, atol=1e-6)
    assert int(looped.optimizer.iterations.numpy()) == num_minibatches
    for ours, theirs in zip(looped.online.variables, single.online.variables):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('minibatches_per_call, expected_calls', [(1, 7), (3, 3), (8, 1)])
def test_train_prefetched_groups_minibatches_into_calls(minibatches_per_call, expected_calls):
    config = _cartpole_config(minibatches_per_call=minibatches_per_call)
    learner = dqn.build_learner(config)
    with dqn.FastDQN(config, learner, seed=0) as fast_dqn:
        fast_dqn.prepopulate(200)
        calls = []
        train_on_stack = fast_dqn.train_on_stack
        fast_dqn.train_on_stack = lambda group: (calls.append(len(group.actions)),
                                               train_on_stack(group))
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as prefetcher:
            trainer_lib.train_prefetched(fast_dqn, 7, prefetcher)
        assert len(calls) == expected_calls and sum(calls) == 7
        assert fast_dqn.minibatches == 7 and int(learner.optimizer.iterations.numpy()) == 7
    assert learner.train_steps.experimental_get_tracing_count() == 1


def test_epsilon_schedule_is_linear_then_flat():
    config = _cartpole_config(initial_epsilon=1.0, final_epsilon=0.1, epsilon_decay_steps=1000)
    assert [config.epsilon(step) for step in (0, 500, 1000, 5000)] == pytest.approx(
        [1.0, 0.55, 0.1, 0.1])


@pytest.mark.parametrize('concurrent, synchronized', [(False, False), (True, False),
                                                      (False, True), (True, True)])
def test_modes_train_c_over_f_minibatches_per_period_and_act_with_the_right_network(
        concurrent, synchronized):
    config = _cartpole_config(concurrent=concurrent, synchronized=synchronized, num_actors=4,
                              target_period=200)
    learner = dqn.build_learner(config)
    with dqn.FastDQN(config, learner, seed=0) as fast_dqn:
        fast_dqn.prepopulate(200)
        assert len(fast_dqn.replay) == 200 and fast_dqn.minibatches == 0
        assert fast_dqn.act_fn is (learner.target_greedy if concurrent else learner.online_greedy)
        step = fast_dqn.run_period(0, 200)
        assert step == 200 and fast_dqn.minibatches == 200 // 4
        # Concurrent training holds a period's steps back until the threads synchronize.
        assert len(fast_dqn.replay) == (200 if concurrent else 400)
        fast_dqn.run_period(step, 200)
        assert fast_dqn.minibatches == 100 and len(fast_dqn.replay) == (400 if concurrent else 600)
    assert not [thread for thread in threading.enumerate() if thread.name.startswith('dqn-')]
    # The mode's one update function traced once; the other never (it traces on first use).
    traces = (learner.train_step.experimental_get_tracing_count(),
              learner.train_steps.experimental_get_tracing_count())
    assert traces == ((0, 1) if concurrent else (1, 0)), traces


@pytest.mark.parametrize('concurrent, synchronized', [(True, True), (False, False)])
def test_replayed_transitions_follow_cartpole_dynamics(concurrent, synchronized):
    """s' of every sampled non-terminal transition is CartPole's Euler step from s under a."""
    config = _cartpole_config(concurrent=concurrent, synchronized=synchronized)
    learner = dqn.build_learner(config)
    with dqn.FastDQN(config, learner, seed=0) as fast_dqn:
        fast_dqn.prepopulate(200)
        step = 0
        for _ in range(3):
            step = fast_dqn.run_period(step, 200)
        batch = fast_dqn.replay.sample(1000)
    alive = batch.terminals == 0
    assert 0.8 < alive.mean() < 1.0
    observations, next_observations = batch.observations[alive], batch.next_observations[alive]
    tau = 0.02  # CartPole's Euler step: x' = x + tau * x_dot, theta' = theta + tau * theta_dot
    np.testing.assert_allclose(next_observations[:, 0],
                               observations[:, 0] + tau * observations[:, 1], atol=1e-6)
    np.testing.assert_allclose(next_observations[:, 2],
                               observations[:, 2] + tau * observations[:, 3], atol=1e-6)
    # Pushing right (action 1) speeds the cart up to the right: the stored action is a_t.
    pushed_right = next_observations[:, 1] > observations[:, 1]
    assert (pushed_right == (batch.actions[alive] == 1)).mean() > 0.95
    np.testing.assert_array_equal(batch.rewards, 1.0)


def _weights_after_training(concurrent, synchronized, seed):
    config = _cartpole_config(concurrent=concurrent, synchronized=synchronized, num_actors=4,
                              seed=seed, total_steps=3000, target_period=400)
    learner = dqn.build_learner(config)
    with dqn.FastDQN(config, learner, seed=seed) as fast_dqn:
        fast_dqn.prepopulate(config.prepopulate_steps)
        step = 0
        while step < config.total_steps:
            step = fast_dqn.run_period(step, config.target_period)
    return [variable.numpy() for variable in learner.online.variables]


@pytest.mark.slow
@pytest.mark.parametrize('concurrent', [False, True])
def test_synchronized_modes_are_deterministic_for_a_fixed_seed_and_w(concurrent):
    """Section 4: minibatches come in a fully deterministic order, so weights match exactly."""
    tf.keras.utils.set_random_seed(11)
    first = _weights_after_training(concurrent, True, seed=5)
    tf.keras.utils.set_random_seed(11)
    second = _weights_after_training(concurrent, True, seed=5)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    tf.keras.utils.set_random_seed(11)
    other_seed = _weights_after_training(concurrent, True, seed=6)
    assert any(np.abs(a - b).max() > 0 for a, b in zip(first, other_seed))


class _FailingEnv:
    """Steps fine a few times, then raises, as a crashing emulator would."""
    num_actions = 2

    def __init__(self, steps_before_failure):
        self.remaining = steps_before_failure
        self.episode_return = 0.0
        self.episode_length = 0

    def reset(self):
        return np.zeros(4, np.float32)

    def step(self, action):
        self.remaining -= 1
        if self.remaining < 0:
            raise RuntimeError('emulator crashed')
        return np.zeros(4, np.float32), 0.0, False, False

    def close(self):
        pass


@pytest.mark.slow
def test_a_failing_actor_stops_the_run_and_every_thread(monkeypatch):
    config = _cartpole_config(concurrent=True, synchronized=True, num_actors=2)
    monkeypatch.setattr(gym_envs.GymConfig, 'make', lambda self, seed: _FailingEnv(150))
    learner = dqn.build_learner(config)
    with pytest.raises(RuntimeError, match='failed') as raised:
        with dqn.FastDQN(config, learner, seed=0) as fast_dqn:
            fast_dqn.prepopulate(200)
            fast_dqn.run_period(0, 200)
    assert 'emulator crashed' in repr(raised.value.__cause__)
    assert not [thread for thread in threading.enumerate() if thread.name.startswith('dqn-')]


def test_invalid_values_are_named():
    with pytest.raises(errors.ConfigError, match='target_period=1000 .* num_actors=3'):
        _cartpole_config(target_period=1000, num_actors=3, total_steps=3000)
    with pytest.raises(errors.ConfigError, match='train_period'):
        _cartpole_config(target_period=200, train_period=3)
    with pytest.raises(errors.ConfigError, match='batch_size'):
        _cartpole_config(batch_size=0)
    with pytest.raises(errors.ConfigError, match='final_epsilon'):
        _cartpole_config(final_epsilon=1.5)
    with pytest.raises(errors.ConfigError, match="'resnet'"):
        _cartpole_config(network='resnet')
    with pytest.raises(errors.ConfigError, match='tf_intra_op_threads .* got -1'):
        _cartpole_config(tf_intra_op_threads=-1)
    with pytest.raises(errors.ConfigError, match=r'acting_nice .* \[0, 19\], got 20'):
        _cartpole_config(acting_nice=20)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='per-thread niceness is Linux')
@pytest.mark.parametrize('concurrent', [False, True])
def test_actors_yield_the_cpu_to_the_learner_only_when_it_trains_concurrently(concurrent):
    config = _cartpole_config(concurrent=concurrent, acting_nice=7)
    learner = dqn.build_learner(config)
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    with dqn.FastDQN(config, learner, seed=0) as fast_dqn:
        fast_dqn.prepopulate(200)  # every actor has run by now
        fast_dqn.run_period(0, 200)
        actors = {os.getpriority(os.PRIO_PROCESS, actor.native_id) for actor in fast_dqn.actors}
        assert actors == {min(19, own + 7) if concurrent else own}
        if concurrent:
            assert os.getpriority(os.PRIO_PROCESS, fast_dqn.trainer.native_id) == own
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == own


def test_learner_threads_leave_a_core_to_the_actors(monkeypatch):
    monkeypatch.setattr(os, 'cpu_count', lambda: 8)
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: set(range(8)), raising=False)
    assert _cartpole_config().intra_op_threads() == 7
    assert _cartpole_config(tf_intra_op_threads=0).intra_op_threads() == 0  # TF's default
    # A container or taskset that allows 3 of the host's 64 CPUs: 2 threads, not 63.
    monkeypatch.setattr(os, 'cpu_count', lambda: 64)
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {4, 5, 6}, raising=False)
    assert _cartpole_config().intra_op_threads() == 2
    monkeypatch.setattr(os, 'cpu_count', lambda: 1)
    assert _cartpole_config().intra_op_threads() == 1


@pytest.mark.slow
def test_dqn_learns_cartpole():
    """Algorithm 1 (W=2): some evaluation of 20 greedy episodes on CartPole-v1 reaches a mean
    return >= 400 within a 50k-step budget (evaluations every 1,000 steps from 5,000).

    Two causes of the old flakiness (2 failures in 5 runs on one AVX2 machine, best means 370.65
    and 349.3): the Q network's initial weights were not seeded, so no two runs were alike even
    on one machine (now drawn from DQNConfig.seed); and with Huber delta 1 the ~3% terminal
    transitions (target 1) pulled no harder than the rest, so Q at terminal states stayed at the
    level of the others (~31 against a target of 1 after 20k steps) and the greedy return hovered
    at 200-390 or collapsed to ~9 as Q diverged. Delta 10 lets a terminal's large TD error be
    fitted: the return peaks at 7k-12k steps, then drifts down after ~25k.

    Swept with Keras' global seed (before initial weights were drawn from DQNConfig.seed): seeds
    0-9 under the default kernels, ONEDNN_MAX_CPU_ISA=AVX2 and TF_ENABLE_ONEDNN_OPTS=0: all 30
    reached 400 by step 10,000, and 30 runs with unseeded weights all by step 9,000."""
    config = _cartpole_config(
        num_actors=2, concurrent=True, synchronized=True, total_steps=50_000,
        batch_size=64, replay_capacity=50_000, target_period=500, train_period=1,
        prepopulate_steps=1000, learning_rate=5e-4, huber_delta=10.0,
        epsilon_decay_steps=10_000, final_epsilon=0.02, double_dqn=True, seed=2,
        torso_kwargs={'hidden_sizes': (64, 64), 'activation': 'relu'})
    learner = dqn.build_learner(config)
    greedy = evaluate.epsilon_greedy_policy(learner, 0.0, seed=0)
    scores = []
    with dqn.FastDQN(config, learner, seed=config.seed) as fast_dqn:
        fast_dqn.prepopulate(config.prepopulate_steps)
        step = 0
        while step < config.total_steps and max(scores, default=0) < 400:
            step = fast_dqn.run_period(step, config.target_period)
            if step >= 5000 and step % 1000 == 0:
                scores.append(evaluate.run_episodes(
                    gym_envs.GymConfig('CartPole-v1'), greedy, 20, seed=step).mean())
    print(f'learning: DQN CartPole best mean {max(scores):.1f} at step {step:,}')
    assert max(scores) >= 400, scores
