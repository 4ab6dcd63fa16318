"""The off-policy phases: every simulator's steps land in its own replay stream as sampled, the
replay ratio is the configured one, the target network is copied on its period, and DQN on it
(and on the concurrent phases) learns CartPole."""
import contextlib
import dataclasses
import io

import common  # noqa: F401
import numpy as np
import pytest
import tensorflow as tf

from common import evaluate
from common.envs import gym as gym_envs
from common.envs import pools
from common.learners import networks
from common.learners import q_learner
from common.replay import replay as replay_lib
from common.run import runner
from common.run import tracker as tracker_lib
from common.tools import run_files
from common.units import concurrent_off_policy
from common.units import off_policy
from common.units import samplers

CARTPOLE = gym_envs.GymConfig('CartPole-v1')
SPEC = tf.TensorSpec((None, 4), tf.float32)


def _learner(seed=0, hidden_sizes=(16,), learning_rate=1e-3, huber_delta=1.0):
    make = lambda: networks.make_q_network(  # noqa: E731
        2, (4,), np.float32, network='mlp', seed=seed,
        torso_kwargs={'hidden_sizes': hidden_sizes, 'activation': 'relu'})
    settings = q_learner.QSettings(gamma=0.99, double_dqn=True, huber_delta=huber_delta)
    return q_learner.QLearner(make, 2, q_learner.centered_rmsprop(learning_rate, 0.95, 0.01),
                              settings, SPEC)


def _memory(num_envs, capacity=4000, seed=0):
    return replay_lib.ReplayMemory(capacity, (4,), np.float32, stack=1, num_streams=num_envs,
                                   seed=seed)


def test_each_simulators_steps_land_in_its_own_stream_as_sampled():
    num_envs, horizon = 3, 5
    settings = off_policy.OffPolicySettings(batch_size=4, updates_per_phase=1,
                                            min_replay_steps=10 ** 9, target_period=100)
    memory = _memory(num_envs, capacity=3 * 40)
    # Episodes cut at 7 steps: episode starts inside and across rollouts.
    with pools.SerialPool(gym_envs.GymConfig('CartPole-v1', max_episode_steps=7), num_envs,
                          seed=5) as pool:
        sampler = samplers.make_sampler('synchronized', pool, horizon)
        phases = off_policy.OffPolicyPhases(sampler, _learner(), memory, settings, seed=1)
        rollouts = []
        for phase in range(4):
            phases.iterate(phase * num_envs * horizon)
            rollout = sampler.rollout
            rollouts.append((rollout.observations[:-1].copy(), rollout.actions.copy(),
                             rollout.rewards.copy(), rollout.terminals.copy(),
                             rollout.dones.copy()))
    observations, actions, rewards, terminals, dones = (np.concatenate(field)
                                                        for field in zip(*rollouts))
    for env in range(num_envs):
        np.testing.assert_array_equal(memory.frames[env, :20], observations[:, env])
        np.testing.assert_array_equal(memory.actions[env, :20], actions[:, env])
        np.testing.assert_array_equal(memory.rewards[env, :20], rewards[:, env])
        np.testing.assert_array_equal(memory.terminals[env, :20], terminals[:, env] > 0)
        starts = np.concatenate([[True], dones[:-1, env]])
        np.testing.assert_array_equal(memory.episode_starts[env, :20], starts)
    assert dones[6::7].all()  # every seventh step ends an episode


@pytest.mark.parametrize('starts_at_terminals', [False, True])
def test_a_terminal_without_a_reset_starts_an_episode_in_replay_where_the_stack_restarts(
        starts_at_terminals):
    """A lost life (terminal, no done) starts an episode in replay only where the env restarts
    its frame stack there (AtariConfig.life_loss_restarts_stack); a done always does."""
    settings = off_policy.OffPolicySettings(batch_size=4, updates_per_phase=1,
                                            min_replay_steps=10 ** 9, target_period=100,
                                            starts_at_terminals=starts_at_terminals)
    memory = _memory(1, capacity=40)
    with pools.SerialPool(CARTPOLE, 1, seed=5) as pool:
        phases = off_policy.OffPolicyPhases(samplers.make_sampler('synchronized', pool, 4),
                                            _learner(), memory, settings, seed=1)
        rollout = samplers.Rollout(4, 1, (4,), np.float32)
        for terminals, dones in (([0, 1, 0, 0], [0, 0, 0, 1]), ([0, 0, 1, 0], [0, 0, 0, 0])):
            rollout.terminals[:, 0], rollout.dones[:, 0] = terminals, dones
            phases._store(rollout)  # pylint: disable=protected-access
    # Steps 0-7: the first starts; after the lost lives at 1 and 6 only with the restart; after
    # the done at 3 always.
    life = starts_at_terminals
    expected = [True, False, life, False, True, False, False, life]
    np.testing.assert_array_equal(memory.episode_starts[0, :8], expected)


def test_the_replay_ratio_is_the_configured_one_and_the_target_follows_its_period():
    num_envs, horizon = 2, 4
    settings = off_policy.OffPolicySettings(batch_size=16, updates_per_phase=3,
                                            min_replay_steps=24, target_period=16)
    learner = _learner()
    copies = []
    learner.update_target = lambda: copies.append(True)
    with pools.SerialPool(CARTPOLE, num_envs, seed=6) as pool:
        phases = off_policy.OffPolicyPhases(
            samplers.make_sampler('synchronized', pool, horizon), learner,
            _memory(num_envs), settings, seed=2)
        updates = [phases.iterate(phase * 8)[1] for phase in range(10)]
    # 8 steps per phase: replay holds 24 steps after phase 3, so phases 3-10 train.
    assert updates == [0, 0, 3, 3, 3, 3, 3, 3, 3, 3]
    assert phases.take_replay_ratio() == pytest.approx(8 * 3 * 16 / 80)
    assert len(copies) == 5  # 80 steps, a copy every 16
    assert int(learner.optimizer.iterations.numpy()) == 24


def test_the_off_policy_unit_drives_the_phases_under_the_run_call(tmp_path):
    """runner.train over an OffPolicyUnit: each advance() is one phase of horizon x num_envs
    steps and its updates; the rows hold the unit's columns (epsilon, replay ratio and size,
    time shares) and the learner's update means; the checkpoint holds both networks and the
    optimizer."""
    num_envs, horizon = 2, 4
    settings = off_policy.OffPolicySettings(batch_size=8, updates_per_phase=2,
                                            min_replay_steps=24, target_period=16,
                                            epsilon_decay_steps=80)
    learner = _learner()
    tracker = tracker_lib.RunTracker(
        str(tmp_path), total_steps=80, log_every_seconds=1e-9, checkpoint_every_steps=40,
        extra_columns=off_policy.UNIT_COLUMNS + learner.update_means.names,
        trackables=off_policy.trackables(learner), stream=io.StringIO())
    runner.train(tracker, lambda: pools.SerialPool(CARTPOLE, num_envs, seed=6),
                 lambda pool: off_policy.OffPolicyUnit(off_policy.OffPolicyPhases(
                     samplers.make_sampler('synchronized', pool, horizon), learner,
                     _memory(num_envs), settings, seed=2)))
    rows = run_files.read_csv(tmp_path / 'metrics.csv')
    assert [int(row['env_steps']) for row in rows] == list(range(8, 88, 8))
    # Replay holds 24 steps after the third phase, which trains: 8 phases of 2 updates.
    assert [int(row['updates']) for row in rows] == [0, 0] + list(range(2, 18, 2))
    assert [float(row['replay_ratio']) for row in rows[2:]] == [8 * 2 / 8] * 8
    assert [int(row['replay_size']) for row in rows] == list(range(8, 88, 8))
    assert float(rows[-1]['epsilon']) == pytest.approx(1.0 + 72 / 80 * (0.01 - 1.0))
    assert all(float(row[name]) >= 0 for row in rows[2:]
               for name in ('loss', 'learn_share', 'env_share', 'act_share'))
    assert sorted(off_policy.trackables(learner)) == ['online', 'optimizer', 'target']
    assert tracker.checkpointer.restore()  # the checkpoint at 40 steps reads back


def test_one_stream_per_simulator_is_required():
    settings = off_policy.OffPolicySettings(batch_size=4, updates_per_phase=1,
                                            min_replay_steps=8, target_period=10)
    with pools.SerialPool(CARTPOLE, 2, seed=0) as pool:
        sampler = samplers.make_sampler('synchronized', pool, 3)
        with pytest.raises(ValueError, match='replay has 1 streams for 2 simulators'):
            off_policy.OffPolicyPhases(sampler, _learner(), _memory(1), settings)


def test_epsilon_is_held_through_warm_up_then_decays_linearly_then_stays():
    settings = off_policy.OffPolicySettings(batch_size=4, updates_per_phase=1,
                                            min_replay_steps=8, target_period=10,
                                            initial_epsilon=1.0, final_epsilon=0.1,
                                            epsilon_decay_steps=1000)
    assert off_policy.linear_epsilon(settings, 0) == pytest.approx(1.0)
    assert off_policy.linear_epsilon(settings, 500) == pytest.approx(0.55)
    # Held at the start until min_replay_steps are stored (accel_rl's dqn.py), then on the line.
    held = dataclasses.replace(settings, min_replay_steps=600)
    assert off_policy.linear_epsilon(held, 599) == pytest.approx(1.0)
    assert off_policy.linear_epsilon(held, 600) == pytest.approx(0.46)
    assert off_policy.linear_epsilon(settings, 5000) == pytest.approx(0.1)


@pytest.mark.slow
@pytest.mark.parametrize('phases_class', [off_policy.OffPolicyPhases,
                                          concurrent_off_policy.ConcurrentOffPolicyPhases])
def test_dqn_on_off_policy_phases_learns_cartpole(phases_class):
    """Double DQN on 4 simulators x horizon 4 (16 steps a phase, 16 updates of 64: replay ratio
    64), fast DQN's CartPole test settings but a learning rate of 2.5e-4; some evaluation of 20
    greedy episodes reaches a mean return >= 400 within 30k steps (evaluations every 1,000 from
    4,000).

    Swept on this 2-core machine (seed = network seed): at 5e-4, uniform seeds 0, 1 passed by
    16k and seed 2 peaked at 394 (10k) and fell; at 2.5e-4, uniform seeds 0-3 all passed by
    14k, and with prioritized replay (alpha 0.6) seeds 0-2 by 18k. Prioritized learning is
    tested through eps-Rainbow (tests/accel_tf/test_q_family.py), the slower run kept once.
    The concurrent phases (training while the next phase samples) reached 429 by 16k steps;
    its acting weights change while it samples, as the trainer thread's timing falls, and under
    the full suite's load it once peaked at 393.7 within 30k steps: it gets 40k, and a second
    network seed (0) if the first misses (broken phases miss with both)."""
    if phases_class is off_policy.OffPolicyPhases:
        scores = _dqn_cartpole_scores(phases_class, network_seed=2, budget=30_000)
    else:
        scores = _dqn_cartpole_scores(phases_class, network_seed=2, budget=40_000)
        if max(scores) < 400:
            print(f'learning: seed 2 best {max(scores):.1f}; again with network seed 0')
            scores = _dqn_cartpole_scores(phases_class, network_seed=0, budget=40_000)
    assert max(scores) >= 400, scores


def _dqn_cartpole_scores(phases_class, network_seed, budget):
    """The evaluations' means of test_dqn_on_the_runner_learns_cartpole's run, which stops at
    the first >= 400 or at the budget."""
    num_envs, horizon = 4, 4
    settings = off_policy.OffPolicySettings(
        batch_size=64, updates_per_phase=16, min_replay_steps=1000, target_period=500,
        initial_epsilon=1.0, final_epsilon=0.02, epsilon_decay_steps=10_000)
    learner = _learner(seed=network_seed, hidden_sizes=(64, 64), learning_rate=2.5e-4,
                       huber_delta=10.0)
    replay = _memory(num_envs, capacity=50_000, seed=3)
    greedy = lambda observations: learner.online_greedy(observations).numpy()  # noqa: E731
    scores = []
    with pools.SerialPool(CARTPOLE, num_envs, seed=7) as pool:
        with contextlib.closing(phases_class(
                samplers.make_sampler('synchronized', pool, horizon), learner, replay, settings,
                seed=5)) as phases:
            step = 0
            while step < budget and max(scores, default=0) < 400:
                phases.iterate(step)
                step += num_envs * horizon
                if step >= 4000 and step % 1000 == 0:
                    phases.wait_for_training()
                    scores.append(evaluate.run_episodes(CARTPOLE, greedy, 20,
                                                        seed=step).mean())
    print(f'learning: {phases_class.__name__} DQN CartPole best mean {max(scores):.1f} at step '
          f'{step:,}')
    return scores
