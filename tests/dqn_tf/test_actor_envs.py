"""DQNConfig.actor_envs: the samplers' environments in worker processes give the same
transitions and weights as in-thread ones, every worker ends with the run; 'vector' stages the
steps of ale_py's vector env in each lane's own replay stream."""
import os
import signal
import sys
import threading

import numpy as np
import pytest
import tensorflow as tf

from common.envs import ale_vector
from common.envs import atari
from common.envs import gym as gym_envs
from common.system import errors
from common.system import processes
from dqn_tf import config as config_lib
from dqn_tf import dqn


def _config(**overrides):
    values = dict(env_config=gym_envs.GymConfig('CartPole-v1'), num_actors=4, total_steps=1200,
                  batch_size=32, replay_capacity=10_000, target_period=400, train_period=4,
                  prepopulate_steps=200, network='mlp', epsilon_decay_steps=1000,
                  eval_every_steps=0, seed=5)
    values.update(overrides)
    config = config_lib.DQNConfig(**values)
    config.validate()
    return config


def _train(config):
    """Online weights, replay arrays and finished episodes after the config's training."""
    tf.keras.utils.set_random_seed(11)
    learner = dqn.build_learner(config)
    with dqn.FastDQN(config, learner, seed=config.seed) as fast_dqn:
        fast_dqn.prepopulate(config.prepopulate_steps)
        step = 0
        while step < config.total_steps:
            step = fast_dqn.run_period(step, config.target_period)
        fast_dqn._flush()  # pylint: disable=protected-access
        replay = fast_dqn.replay
        stored = [replay.frames.copy(), replay.actions.copy(), replay.rewards.copy(),
                  replay.terminals.copy(), replay.episode_starts.copy()]
        episodes = fast_dqn.drain_episodes()
    return [variable.numpy() for variable in learner.online.variables], stored, episodes


@pytest.mark.slow
@pytest.mark.parametrize('mode', ['both', 'standard'])
def test_process_envs_give_the_thread_envs_transitions_and_weights(mode):
    """Same seeds, same per-sampler random streams, same round order of replay writes: led
    (both) and broadcast (standard) rounds over processes match the in-thread rounds exactly."""
    concurrent, synchronized = config_lib.MODE_SWITCHES[mode]
    in_thread = _train(_config(concurrent=concurrent, synchronized=synchronized))
    in_process = _train(_config(concurrent=concurrent, synchronized=synchronized,
                                actor_envs='process'))
    for ours, theirs in zip(in_thread[0] + in_thread[1], in_process[0] + in_process[1]):
        np.testing.assert_array_equal(ours, theirs)
    assert in_thread[2] == in_process[2] and len(in_thread[2]) > 10  # (score, length) pairs


def test_closing_ends_every_worker_process_and_its_shared_memory():
    config = _config(actor_envs='process')
    with dqn.FastDQN(config, dqn.build_learner(config), seed=0) as fast_dqn:
        fast_dqn.prepopulate(40)
        pids, segment = fast_dqn.pool.pids, fast_dqn.pool.shm_name
        assert len(pids) == 4 and all(processes.pid_alive(pid) for pid in pids)
    assert not any(processes.pid_alive(pid) for pid in pids)
    assert not os.path.exists(f'/dev/shm/{segment}')
    assert not [thread for thread in threading.enumerate() if thread.name.startswith('dqn-')]


def test_a_killed_worker_process_ends_the_round_naming_it():
    config = _config(actor_envs='process')
    with pytest.raises(processes.WorkerDiedError, match=r'worker 2 \(pid \d+\) was killed by '
                                                        'signal SIGKILL') as raised:
        with dqn.FastDQN(config, dqn.build_learner(config), seed=0) as fast_dqn:
            fast_dqn.prepopulate(40)
            pids = fast_dqn.pool.pids
            os.kill(pids[2], signal.SIGKILL)
            fast_dqn.prepopulate(40)
    assert 'dqn-actor-2' in str(raised.value)
    assert not any(processes.pid_alive(pid) for pid in pids)
    assert not [thread for thread in threading.enumerate() if thread.name.startswith('dqn-')]


@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='niceness is Linux here')
@pytest.mark.parametrize('concurrent', [False, True])
def test_worker_processes_act_at_the_actor_threads_priority(concurrent):
    config = _config(actor_envs='process', concurrent=concurrent, acting_nice=5)
    own = os.getpriority(os.PRIO_PROCESS, 0)
    with dqn.FastDQN(config, dqn.build_learner(config), seed=0) as fast_dqn:
        workers = {os.getpriority(os.PRIO_PROCESS, pid) for pid in fast_dqn.pool.pids}
    assert workers == {min(19, own + 5) if concurrent else own}


def test_an_unknown_place_for_the_environments_is_named():
    with pytest.raises(errors.ConfigError,
                       match=r"DQNConfig.actor_envs='gpu'; allowed: "
                             r"\('thread', 'process', 'vector'\)"):
        _config(actor_envs='gpu')
    with pytest.raises(errors.ConfigError, match=r"DQNConfig.actor_envs='vector' cannot run "
                                                 r'this env_config: .*AtariConfig only'):
        _config(actor_envs='vector')


SMALL_PONG = atari.AtariConfig(game='pong', screen_size=(42, 42), resize='linear', stack=2,
                               max_episode_steps=30)


def _vector_config(**overrides):
    return _config(env_config=SMALL_PONG, actor_envs='vector', network='nature',
                   replay_capacity=4_000, total_steps=400, target_period=40,
                   prepopulate_steps=32, **overrides)


@pytest.mark.slow
def test_vector_envs_stage_each_environments_steps_in_its_own_stream():
    """Replay holds, per stream, what a separate pool of the same seed gives for the actions
    drawn from that lane's own random stream: newest frames, actions, clipped rewards, ends."""
    config, rounds = _vector_config(), 50  # > max_episode_steps: episodes end and restart
    with dqn.FastDQN(config, dqn.build_learner(config), seed=3) as fast_dqn:
        fast_dqn.random_actions = True  # prepopulation's rounds, without its draining
        for _ in range(rounds):
            fast_dqn._round()  # pylint: disable=protected-access
            fast_dqn._flush()  # pylint: disable=protected-access
        replay, episodes = fast_dqn.replay, fast_dqn.drain_episodes()
        assert len(fast_dqn.actors) == 1 and len(fast_dqn.lanes) == 4
    lanes = [np.random.default_rng([3, index]) for index in range(4)]
    pool = ale_vector.AleVectorPool(SMALL_PONG, 4, seed=3 * 1009, num_threads=1)
    try:
        observations = pool.reset().copy()
        for step in range(rounds):
            actions = np.array([lane.integers(pool.num_actions) for lane in lanes])
            result = pool.step(actions)
            np.testing.assert_array_equal(replay.frames[:, step], observations[..., -1])
            np.testing.assert_array_equal(replay.actions[:, step], actions)
            np.testing.assert_array_equal(replay.rewards[:, step], result.rewards)
            np.testing.assert_array_equal(replay.terminals[:, step], result.terminals)
            observations = result.observations.copy()
    finally:
        pool.close()
    assert replay.episode_starts[:, 0].all() and replay.episode_starts[:, 30].all()
    assert sorted(length for _, length in episodes) == [30] * 4


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith('linux'), reason='niceness is Linux here')
def test_vector_envs_train_in_both_mode_and_their_threads_end_with_the_run():
    config = _vector_config(acting_nice=5)
    own = os.getpriority(os.PRIO_PROCESS, 0)
    before = set(os.listdir('/proc/self/task'))
    with dqn.FastDQN(config, dqn.build_learner(config), seed=0) as fast_dqn:
        emulators = set(os.listdir('/proc/self/task')) - before - {
            str(thread.native_id) for thread in threading.enumerate() if thread.native_id}
        assert emulators and {os.getpriority(os.PRIO_PROCESS, int(task))
                              for task in emulators} == {min(19, own + 5)}
        fast_dqn.prepopulate(config.prepopulate_steps)
        assert fast_dqn.run_period(0, config.target_period) == config.target_period
        assert fast_dqn.minibatches == config.target_period // config.train_period
    assert not emulators & set(os.listdir('/proc/self/task'))
    assert not [thread for thread in threading.enumerate() if thread.name.startswith('dqn-')]
