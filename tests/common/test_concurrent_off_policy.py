"""The concurrent off-policy runner: sampling overlaps training, the replay ratio stays the
configured one however slow the trainer, the target follows its period, a failed trainer ends
the run with its error, and DQN on it learns CartPole."""
import threading
import time

import common  # noqa: F401
import numpy as np
import pytest
import tensorflow as tf

from common import concurrent_off_policy
from common import evaluate
from common import networks
from common import off_policy
from common import q_learner
from common import replay as replay_lib
from common import samplers
from common.envs import gym as gym_envs
from common.envs import pools

CARTPOLE = gym_envs.GymConfig('CartPole-v1')
SPEC = tf.TensorSpec((None, 4), tf.float32)
NUM_ENVS, HORIZON = 2, 4  # 8 steps a phase


def _learner(seed=0, hidden_sizes=(16,), learning_rate=1e-3, huber_delta=1.0):
    make = lambda: networks.make_q_network(  # noqa: E731
        2, (4,), np.float32, network='mlp', seed=seed,
        torso_kwargs={'hidden_sizes': hidden_sizes, 'activation': 'relu'})
    settings = q_learner.QSettings(gamma=0.99, double_dqn=True, huber_delta=huber_delta)
    return q_learner.QLearner(make, 2, q_learner.centered_rmsprop(learning_rate, 0.95, 0.01),
                              settings, SPEC)


def _memory(num_envs=NUM_ENVS, capacity=4000, seed=0):
    return replay_lib.ReplayMemory(capacity, (4,), np.float32, stack=1, num_streams=num_envs,
                                   seed=seed)


def _settings(**overrides):
    values = dict(batch_size=16, updates_per_phase=3, min_replay_steps=24, target_period=16)
    values.update(overrides)
    return off_policy.OffPolicySettings(**values)


def _runner(pool, learner, settings, **kwargs):
    return concurrent_off_policy.ConcurrentOffPolicyRunner(
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


def test_updates_and_target_copies_are_the_synchronous_runners():
    learner = _learner()
    copies = []
    learner.update_target = lambda: copies.append(True)
    with pools.SerialPool(CARTPOLE, NUM_ENVS, seed=6) as pool:
        with _runner(pool, learner, _settings()) as runner:
            for phase in range(10):
                runner.iterate(phase * 8)
            runner.wait_for_training()
            ratio = runner.take_replay_ratio()
    # As in the synchronous runner: replay holds 24 steps after phase 3, so phases 3-10 train.
    assert int(learner.optimizer.iterations.numpy()) == 8 * 3
    assert ratio == pytest.approx(8 * 3 * 16 / 80)
    assert len(copies) == 5  # 80 steps, a copy every 16
    assert not runner.trainer.is_alive()


@pytest.mark.parametrize('replay_input', ['direct', 'tf_data'])
def test_the_replay_ratio_holds_when_the_trainer_is_slower_than_the_sampler(replay_input):
    """Each phase samples 8 steps in about a millisecond and trains 3 x 16 in over 20 ms: a
    free-running sampler would store ~20 phases per phase trained. Over 30 phases the measured
    ratio must stay within 10% of 3 x 16 / 8 = 6 (one phase owed at most: 29 or 30 of 30)."""
    learner = _slowed(_learner(), 0.02)
    with pools.SerialPool(CARTPOLE, NUM_ENVS, seed=6) as pool:
        with _runner(pool, learner, _settings(min_replay_steps=16),
                     replay_input=replay_input) as runner:
            for phase in range(2):
                runner.iterate(phase * 8)   # replay reaches 16 steps: every phase trains
            runner.wait_for_training()
            runner.take_replay_ratio()
            for phase in range(2, 32):
                runner.iterate(phase * 8)
            ratio = runner.take_replay_ratio()
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
        with _runner(pool, learner, _settings(min_replay_steps=8)) as runner:
            runner.iterate(0)                      # stored: phase 1's updates are owed
            online_greedy = learner.online_greedy
            learner.online_greedy = lambda observations: (acted.set(),
                                                          online_greedy(observations))[1]
            started = time.perf_counter()
            runner.iterate(8)
            runner.wait_for_training()
    assert time.perf_counter() - started < 10
    assert int(learner.optimizer.iterations.numpy()) == 2 * 3


def test_a_failed_trainer_ends_the_next_iterate_with_its_error():
    learner = _learner()

    def broken(*stack):
        raise tf.errors.ResourceExhaustedError(None, None, 'out of memory in the update')

    learner.train_steps = broken
    with pools.SerialPool(CARTPOLE, NUM_ENVS, seed=6) as pool:
        with _runner(pool, learner, _settings(min_replay_steps=8)) as runner:
            with pytest.raises(RuntimeError, match='trainer thread failed: ResourceExhausted'):
                for phase in range(5):
                    runner.iterate(phase * 8)
    assert not runner.trainer.is_alive()


def test_lead_phases_must_be_positive():
    with pools.SerialPool(CARTPOLE, NUM_ENVS, seed=6) as pool:
        with pytest.raises(ValueError, match='lead_phases=0; allowed: >= 1'):
            _runner(pool, _learner(), _settings(), lead_phases=0)


def test_dqn_on_the_concurrent_runner_learns_cartpole():
    """test_off_policy's DQN CartPole test (4 x 4 simulators x horizon, 16 updates of 64 a
    phase, 2.5e-4) with training concurrent to sampling: some evaluation of 20 greedy episodes
    reaches a mean return >= 400 within 30k steps."""
    num_envs, horizon, budget = 4, 4, 30_000
    settings = off_policy.OffPolicySettings(
        batch_size=64, updates_per_phase=16, min_replay_steps=1000, target_period=500,
        initial_epsilon=1.0, final_epsilon=0.02, epsilon_decay_steps=10_000)
    learner = _learner(seed=2, hidden_sizes=(64, 64), learning_rate=2.5e-4, huber_delta=10.0)
    replay = _memory(num_envs, capacity=50_000, seed=3)
    greedy = lambda observations: learner.online_greedy(observations).numpy()  # noqa: E731
    scores = []
    with pools.SerialPool(CARTPOLE, num_envs, seed=7) as pool:
        with concurrent_off_policy.ConcurrentOffPolicyRunner(
                samplers.make_sampler('synchronized', pool, horizon), learner, replay, settings,
                seed=5) as runner:
            step = 0
            while step < budget and max(scores, default=0) < 400:
                runner.iterate(step)
                step += num_envs * horizon
                if step >= 4000 and step % 1000 == 0:
                    runner.wait_for_training()
                    scores.append(evaluate.run_episodes(CARTPOLE, greedy, 20, seed=step).mean())
    print(f'learning: concurrent DQN CartPole best mean {max(scores):.1f} at step {step:,}')
    assert max(scores) >= 400, scores
