"""The concurrent off-policy phases: sampling overlaps training, the replay ratio stays the
configured one however slow the trainer, the target follows its period, and a failed trainer
ends the run with its error (DQN learning CartPole on it: test_off_policy.py)."""
import threading
import time

import common  # noqa: F401
import numpy as np
import pytest
import tensorflow as tf

from common.envs import gym as gym_envs
from common.envs import pools
from common.learners import networks
from common.learners import q_learner
from common.replay import replay as replay_lib
from common.units import concurrent_off_policy
from common.units import off_policy
from common.units import samplers

CARTPOLE = gym_envs.GymConfig('CartPole-v1')
SPEC = tf.TensorSpec((None, 4), tf.float32)
NUM_ENVS, HORIZON = 2, 4  # 8 steps a phase


def _learner():
    make = lambda: networks.make_q_network(  # noqa: E731
        2, (4,), np.float32, network='mlp', seed=0,
        torso_kwargs={'hidden_sizes': (16,), 'activation': 'relu'})
    settings = q_learner.QSettings(gamma=0.99, double_dqn=True)
    return q_learner.QLearner(make, 2, q_learner.centered_rmsprop(1e-3, 0.95, 0.01), settings,
                              SPEC)


def _memory():
    return replay_lib.ReplayMemory(4000, (4,), np.float32, stack=1, num_streams=NUM_ENVS)


def _settings(**overrides):
    values = dict(batch_size=16, updates_per_phase=3, min_replay_steps=24, target_period=16)
    values.update(overrides)
    return off_policy.OffPolicySettings(**values)


def _phases(pool, learner, settings, **kwargs):
    return concurrent_off_policy.ConcurrentOffPolicyPhases(
        samplers.make_sampler('synchronized', pool, HORIZON), learner, _memory(), settings,
        seed=2, **kwargs)


def _slowed(learner, seconds):
    """learner whose train_steps first sleeps (a trainer far slower than the sampler)."""
    train_steps = learner.train_steps

    def slow(*stack):
        time.sleep(seconds)
        return train_steps(*stack)

    learner.train_steps = slow
    return learner


def test_updates_and_target_copies_are_the_synchronous_phases():
    learner = _learner()
    copies = []
    learner.update_target = lambda: copies.append(True)
    with pools.SerialPool(CARTPOLE, NUM_ENVS, seed=6) as pool:
        with _phases(pool, learner, _settings()) as phases:
            for phase in range(10):
                phases.iterate(phase * 8)
            phases.wait_for_training()
            ratio = phases.take_replay_ratio()
    # As in the synchronous phases: replay holds 24 steps after phase 3, so phases 3-10 train.
    assert int(learner.optimizer.iterations.numpy()) == 8 * 3
    assert ratio == pytest.approx(8 * 3 * 16 / 80)
    assert len(copies) == 5  # 80 steps, a copy every 16
    assert not phases.trainer.is_alive()


@pytest.mark.parametrize('replay_input', ['direct', 'tf_data'])
def test_the_replay_ratio_holds_when_the_trainer_is_slower_than_the_sampler(replay_input):
    """Each phase samples 8 steps in about a millisecond and trains 3 x 16 in over 20 ms: a
    free-running sampler would store ~20 phases per phase trained. Over 30 phases the measured
    ratio must stay within 10% of 3 x 16 / 8 = 6 (one phase owed at most: 29 or 30 of 30)."""
    learner = _slowed(_learner(), 0.02)
    with pools.SerialPool(CARTPOLE, NUM_ENVS, seed=6) as pool:
        with _phases(pool, learner, _settings(min_replay_steps=16),
                     replay_input=replay_input) as phases:
            for phase in range(2):
                phases.iterate(phase * 8)   # replay reaches 16 steps: every phase trains
            phases.wait_for_training()
            phases.take_replay_ratio()
            for phase in range(2, 32):
                phases.iterate(phase * 8)
            ratio = phases.take_replay_ratio()
    assert ratio == pytest.approx(6.0, rel=0.1)


def test_sampling_runs_while_the_trainer_trains():
    """The trainer's first update blocks until the sampler has acted in the next phase: the
    synchronous order (sample, then train) could never release it."""
    learner = _learner()
    acted = threading.Event()
    train_steps = learner.train_steps

    def waiting(*stack):
        assert acted.wait(timeout=10), 'the sampler did not run while the trainer trained'
        return train_steps(*stack)

    learner.train_steps = waiting
    with pools.SerialPool(CARTPOLE, NUM_ENVS, seed=6) as pool:
        with _phases(pool, learner, _settings(min_replay_steps=8)) as phases:
            phases.iterate(0)                      # stored: phase 1's updates are owed
            online_greedy = learner.online_greedy
            learner.online_greedy = lambda observations: (acted.set(),
                                                          online_greedy(observations))[1]
            started = time.perf_counter()
            phases.iterate(8)
            phases.wait_for_training()
    assert time.perf_counter() - started < 10
    assert int(learner.optimizer.iterations.numpy()) == 2 * 3


def test_a_failed_trainer_ends_the_next_iterate_with_its_error():
    learner = _learner()

    def broken(*stack):
        raise tf.errors.ResourceExhaustedError(None, None, 'out of memory in the update')

    learner.train_steps = broken
    with pools.SerialPool(CARTPOLE, NUM_ENVS, seed=6) as pool:
        with _phases(pool, learner, _settings(min_replay_steps=8)) as phases:
            with pytest.raises(RuntimeError, match='trainer thread failed: ResourceExhausted'):
                for phase in range(5):
                    phases.iterate(phase * 8)
    assert not phases.trainer.is_alive()


def test_lead_phases_must_be_positive():
    with pools.SerialPool(CARTPOLE, NUM_ENVS, seed=6) as pool:
        with pytest.raises(ValueError, match='lead_phases=0; allowed: >= 1'):
            _phases(pool, _learner(), _settings(), lead_phases=0)
