"""GA3C's server: agent processes without TensorFlow, live changes of NP/NT/NA, dead agents,
clean shutdown, returns and the loss."""
import os
import signal
import struct
import threading
import time

import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf

from common.envs import gym as gym_envs
from common.learners import losses
from common.system import errors
from ga3c_tf import agent
from ga3c_tf import config as config_lib
from ga3c_tf import learner as learner_lib
from ga3c_tf import loop
from ga3c_tf import server as server_lib


def _config(**overrides):
    values = dict(env_config=gym_envs.GymConfig('CartPole-v1'), network='mlp', num_agents=2,
                  num_predictors=1, num_trainers=1, max_agents=8, dynamic_settings=False,
                  learning_rate=1e-3, total_steps=10_000)
    values.update(overrides)
    config = config_lib.GA3CConfig(**values)
    config.validate()
    return config


def _wait_for(condition, seconds=60.0):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_an_experience_item_marks_its_end_and_bootstrap_value():
    observations = np.zeros((3, 4), np.float32)
    item = agent.sequence_item(observations, np.int32([0, 1, 0]), np.float32([1.0, 0.0, 2.0]),
                               10.0, np.int64([4, 4, 5]))
    _, actions, rewards, ends, end_values, versions = item
    np.testing.assert_array_equal(ends, [0, 0, 1])
    np.testing.assert_array_equal(end_values, [0, 0, 10])
    returns = losses.sequence_returns(rewards, ends, end_values, 0.5)
    np.testing.assert_allclose(returns, [1 + 0.5 * 3.5, 0 + 0.5 * 7.0, 2 + 0.5 * 10])
    assert all(len(field) == 3 for field in item)


@pytest.mark.slow
def test_server_runs_changes_settings_live_and_leaves_nothing_behind(process_tree):
    shm_before = process_tree.shm_entries()
    config = _config()
    learner = learner_lib.build_learner(config)
    server = server_lib.GA3CServer(config, learner, seed=3)
    try:
        server.apply((1, 1, 2))
        pids = [handle.process.pid for handle in server.agents.values()]
        assert _wait_for(lambda: server.counts()['updates'] >= 5)
        for pid in pids:  # agents never load TensorFlow
            with open(f'/proc/{pid}/maps') as maps:
                assert 'tensorflow' not in maps.read()
        server.apply((2, 3, 4))
        assert server.settings == (2, 3, 4)
        before = server.counts()
        assert _wait_for(lambda: server.counts()['updates'] >= before['updates'] + 20)
        server.apply((1, 1, 1))
        assert server.settings == (1, 1, 1) and len(server.agents) == 1
        before = server.counts()
        assert _wait_for(lambda: server.counts()['predictions'] >= before['predictions'] + 50)
        counts = server.counts()
        assert counts['predictions'] >= counts['batches'] > 0
        assert counts['samples'] >= counts['updates'] > 0
        # Section 5.1's profile: agents' timed waits, the seconds inside model and train calls.
        assert counts['waits'] > 0  # (a woken agent may count its wait before the predictor)
        assert counts['wait_seconds'] > 0 and counts['request_call_seconds'] > 0
        assert counts['update_seconds'] > 0 and counts['assembly_seconds'] >= 0
        mean_lag, max_lag = server.take_lags()
        assert 0 <= mean_lag <= max_lag
        server.check_threads()
        assert learner.predict.experimental_get_tracing_count() == 1
        assert learner.train_on_sequences.experimental_get_tracing_count() == 1
        all_pids = pids + [handle.process.pid for handle in server.agents.values()]
    finally:
        server.close()
    for pid in all_pids:
        assert not os.path.exists(f'/proc/{pid}') or _is_zombie_free(pid)
    assert not process_tree.leaked_shm(shm_before)


def test_an_agent_still_starting_when_the_server_closes_exits_quietly(capfd):
    """The annealer may add an agent just before the run ends: its process, still importing
    when the server closes its reply board, ends without a traceback."""
    server = server_lib.GA3CServer(_config(), learner_lib.build_learner(_config()), seed=3)
    try:
        server.apply((1, 1, 1))
        assert _wait_for(lambda: server.counts()['predictions'] >= 5)
        capfd.readouterr()
        server.add_agent()  # spawned: seconds of imports before it attaches to the board
    finally:
        server.close()
    assert 'Traceback' not in capfd.readouterr().err


def _is_zombie_free(pid):
    with open(f'/proc/{pid}/status') as status:
        return 'State:\tZ' not in status.read()


@pytest.mark.slow
def test_a_dead_agent_stops_the_run_or_is_replaced():
    config = _config(num_agents=2)
    learner = learner_lib.build_learner(config)
    with server_lib.GA3CServer(config, learner) as server:
        server.apply((1, 1, 2))
        assert _wait_for(lambda: server.counts()['predictions'] > 10)
        slot, handle = next(iter(server.agents.items()))
        os.kill(handle.process.pid, signal.SIGKILL)
        handle.process.join(timeout=5)
        with pytest.raises(server_lib.AgentDiedError,
                           match=f'agent {slot} .* killed by signal SIGKILL'):
            server.check_agents()

    messages = []
    config = _config(num_agents=2, on_agent_death='replace')
    with server_lib.GA3CServer(config, learner, log=messages.append) as server:
        server.apply((1, 1, 2))
        assert _wait_for(lambda: server.counts()['predictions'] > 10)
        slot, handle = next(iter(server.agents.items()))
        os.kill(handle.process.pid, signal.SIGKILL)
        handle.process.join(timeout=5)
        server.check_agents()
        assert len(server.agents) == 2 and server.agents[slot] is not handle
        assert messages and 'replacing it' in messages[0]
        before = server.counts()['predictions']
        assert _wait_for(lambda: server.counts()['predictions'] > before + 20)


@pytest.mark.slow
def test_replacing_a_dead_agent_recovers_from_a_queue_it_left_locked():
    """An agent SIGKILLed inside its queue feeder leaves the training queue's cross-process write
    lock held (simulated here by taking it): 'replace' must not carry on with that queue."""
    config = _config(num_agents=2, on_agent_death='replace', training_queue_size=2)
    learner = learner_lib.build_learner(config)
    with server_lib.GA3CServer(config, learner, log=lambda message: None) as server:
        server.apply((1, 1, 2))
        assert _wait_for(lambda: server.counts()['updates'] > 5)
        stale_queue = server.training_queue
        stale_queue._wlock.acquire()  # pylint: disable=protected-access
        handle = next(iter(server.agents.values()))
        os.kill(handle.process.pid, signal.SIGKILL)
        handle.process.join(timeout=5)
        server.check_agents()
        assert server.training_queue is not stale_queue
        assert server.settings == (1, 1, 2)
        before = server.counts()['updates']
        assert _wait_for(lambda: server.counts()['updates'] > before + 20)
        server.check_threads()


@pytest.mark.slow
def test_close_ends_a_trainer_stuck_on_a_half_written_batch():
    """What an agent killed mid-write leaves: the write lock held and a message header promising
    more bytes than follow. The trainer reading it must still end when the server closes."""
    config = _config(num_agents=1)
    learner = learner_lib.build_learner(config)
    server = server_lib.GA3CServer(config, learner)
    try:
        server.apply((1, 1, 1))
        assert _wait_for(lambda: server.counts()['updates'] > 2)
        queue = server.training_queue
        queue._wlock.acquire()  # pylint: disable=protected-access
        os.write(queue._writer.fileno(),  # pylint: disable=protected-access
                 struct.pack('!i', 1000) + b'x' * 10)
        time.sleep(1.0)  # the trainer works through what was queued before the half message
        updates = server.counts()['updates']
        time.sleep(1.0)
        assert server.counts()['updates'] == updates  # and is now stuck inside it
    finally:
        server.close()
    assert not [thread.name for thread in threading.enumerate()
                if thread.name.startswith('GA3C-') and thread.is_alive()]


def test_loss_uses_log_epsilon_and_sums_over_the_batch():
    config = _config(learning_rate=1e-3)
    learner = learner_lib.build_learner(config)
    observations = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    actions = np.array([0, 1, 0, 1, 1, 0], np.int32)
    returns = np.linspace(-1, 1, 6).astype(np.float32)
    with tf.GradientTape() as tape:
        logits, values = learner.model(observations)
        probabilities = tf.nn.softmax(logits)
        log_probabilities = tf.math.log(probabilities + 1e-6)
        chosen = tf.reduce_sum(log_probabilities * tf.one_hot(actions, 2), axis=-1)
        advantages = tf.stop_gradient(returns - values)
        entropy = -tf.reduce_sum(probabilities * log_probabilities, axis=-1)
        expected = tf.reduce_sum(-chosen * advantages - 0.01 * entropy
                                 + 0.5 * tf.square(returns - values))
    expected_norm = tf.linalg.global_norm(tape.gradient(expected,
                                                        learner.model.trainable_variables))
    # One-step sequences: each return is its own reward.
    ones = np.ones(6, np.float32)
    stats = learner.train_on_sequences(observations, actions, returns, ones, 0 * ones)
    np.testing.assert_allclose(float(stats['loss']) * 6, float(expected), rtol=1e-5)
    np.testing.assert_allclose(float(stats['grad_norm']), float(expected_norm), rtol=1e-4)


@pytest.mark.parametrize('overrides, named', [
    (dict(num_agents=0), 'num_agents'),
    (dict(num_agents=9, max_agents=8), 'num_agents=9'),
    (dict(algorithm='a4c'), "'a4c'"),
    (dict(trainer_input='queue'), "'queue'"),
    (dict(training_min_batch_size=-1), 'training_min_batch_size'),
    (dict(network='ga3c_large', torso_kwargs={'first_stride': 5}), 'first_stride=5'),
])
def test_invalid_values_are_named(overrides, named):
    with pytest.raises(errors.ConfigError, match=named):
        _config(**overrides)


def test_sample_action_draws_from_the_policy():
    probabilities = np.array([0.1, 0.0, 0.6, 0.3], np.float32)
    # Hand-computed inverse CDF: [0, 0.1) -> 0, [0.1, 0.7) -> 2, [0.7, 1) -> 3.
    assert [agent.sample_action(probabilities, u) for u in (0.0, 0.0999, 0.1001, 0.69, 0.7001,
                                                               0.99999)] == [0, 0, 2, 2, 3, 3]
    # Probabilities that sum to a little under 1 (float32 softmax) still give a valid action.
    assert agent.sample_action(np.array([0.5, 0.4999], np.float32), 1.0 - 1e-12) == 1
    rng = np.random.default_rng(0)
    draws = [agent.sample_action(probabilities, rng.random()) for _ in range(20_000)]
    np.testing.assert_allclose(np.bincount(draws, minlength=4) / 20_000, probabilities,
                               atol=0.01)


def test_the_profile_columns_follow_from_the_counts():
    delta = {'waits': 4, 'wait_seconds': 0.2, 'request_call_seconds': 0.05, 'updates': 2,
             'update_seconds': 0.03, 'assembly_seconds': 0.01}
    assert loop.profile(delta) == pytest.approx({
        'prediction_wait_ms': 50.0, 'prediction_call_share': 0.25, 'update_ms': 15.0,
        'update_assembly_share': 0.25})
    idle = dict(delta, waits=0, wait_seconds=0.0, updates=0, update_seconds=0.0,
                assembly_seconds=0.0)
    assert set(loop.profile(idle).values()) == {None}
