"""Fast DQN's actors (the paper's "samplers"; here "sampler" is the object that fills a rollout,
common/units/samplers.py): one lane per environment (its own rng, staging buffer and episodes),
stepped by an ActorThread per environment, or by one VectorActorThread for all W environments of
an AleVectorPool, whose C++ threads emulate them side by side (DQNConfig.actor_envs)."""
import sys
import threading
import time

from absl import logging
import numpy as np

from common.envs import atari
from common.replay import staging as staging_lib
from common.system import processes


def lower_thread_priority(increment):
    """Makes the calling thread `increment` nicer (Linux); elsewhere it changes nothing."""
    warning = processes.lower_priority(threading.get_native_id(), increment)
    if warning and sys.platform.startswith('linux'):
        logging.warning('%s (%s)', warning, threading.current_thread().name)


class Lane:
    """What is one environment's own: its exploration rng, its staged steps (replay stream
    `index`), whether its next step starts an episode, and its finished episodes."""

    def __init__(self, index, fast_dqn, seed):
        self.index = index
        self.rng = np.random.default_rng([seed, index])
        self.staging = staging_lib.StagingBuffer(fast_dqn.staging_length,
                                                 fast_dqn.replay.frame_shape,
                                                 fast_dqn.replay.observation_dtype)
        self.episode_start = True
        # A lost life starts an episode in replay where the env restarts its stack there.
        self.starts_at_terminals = atari.stack_restarts_at_terminal(fast_dqn.config.env_config)
        self.finished_episodes = []  # (score, length) since the last drain

    def action(self, fast_dqn, observation):
        """Epsilon-greedy (or, while prepopulating, uniformly random); synchronized actors take
        the greedy action from the round's batched inference, the others infer their own."""
        if fast_dqn.random_actions or self.rng.random() < fast_dqn.epsilon:
            return int(self.rng.integers(fast_dqn.num_actions))
        if fast_dqn.config.synchronized:
            return int(fast_dqn.greedy_actions[self.index])
        return int(fast_dqn.act_fn(observation[None]).numpy()[0])

    def record(self, fast_dqn, observation, action, reward, terminal, done):
        """Stages the step taken from `observation` (its newest frame); the caller keeps the
        episode's (score, length) in finished_episodes when `done`."""
        self.staging.add(fast_dqn.replay.newest_frame(observation), action, reward, terminal,
                         self.episode_start)
        self.episode_start = bool(done or (terminal and self.starts_at_terminals))


class _RoundThread(threading.Thread):
    """A thread that takes its step() each round of the FastDQN's gate until the gate closes; a
    failure is kept (error, error_at) for the main thread to raise."""

    def __init__(self, index, fast_dqn, name):
        super().__init__(name=name, daemon=True)
        self.index = index
        self.fast_dqn = fast_dqn
        self.error = None
        self.error_at = None  # time.monotonic() of the failure: the first one is the cause

    def run(self):
        lower_thread_priority(self.fast_dqn.acting_nice)
        gate = self.fast_dqn.gate
        while gate.wait_for_round(self.index):
            try:
                self.step()
            except BaseException as error:  # raised in the main thread by RoundGate.run_round
                self.error, self.error_at = error, time.monotonic()
                gate.finish(self.index, failed=True)
                return
            gate.finish(self.index)


class ActorThread(_RoundThread):
    """One environment (in this thread, or a worker process's PooledEnv), one step per round."""

    def __init__(self, index, fast_dqn, env, seed):
        super().__init__(index, fast_dqn, f'dqn-actor-{index}')
        self.env = env
        self.lanes = [Lane(index, fast_dqn, seed)]
        fast_dqn.observations[index] = env.reset()

    def step(self):
        fast_dqn, lane = self.fast_dqn, self.lanes[0]
        if self.index == 0 and fast_dqn.config.synchronized:
            if not fast_dqn.random_actions:
                # The round's one batched inference: actor 0 goes first, the others still wait.
                fast_dqn.greedy_actions[:] = fast_dqn.act_fn(fast_dqn.observations).numpy()
            if fast_dqn.gate.order == 'led':
                fast_dqn.gate.lead_done()
        observation = fast_dqn.observations[self.index]
        action = lane.action(fast_dqn, observation)
        next_observation, reward, terminal, done = self.env.step(action)
        lane.record(fast_dqn, observation, action, reward, terminal, done)
        if done:
            lane.finished_episodes.append((float(self.env.episode_return),
                                           int(self.env.episode_length)))
            next_observation = self.env.reset()
        observation[...] = next_observation

    def close_env(self):
        self.env.close()


class VectorActorThread(_RoundThread):
    """All W environments of `pool` (an AleVectorPool, reset here): each round it picks the W
    lanes' actions, steps them in one call (ale_py's C++ threads emulate them side by side, the
    GIL released) and stages the W steps."""

    def __init__(self, fast_dqn, pool, seed):
        super().__init__(0, fast_dqn, 'dqn-actors')
        self.pool = pool
        self.lanes = [Lane(index, fast_dqn, seed) for index in range(pool.num_envs)]
        self.actions = np.zeros(pool.num_envs, np.int32)
        fast_dqn.observations[:] = pool.reset()

    def step(self):
        fast_dqn = self.fast_dqn
        observations = fast_dqn.observations
        if fast_dqn.config.synchronized and not fast_dqn.random_actions:
            fast_dqn.greedy_actions[:] = fast_dqn.act_fn(observations).numpy()
        for lane, observation in zip(self.lanes, observations):
            self.actions[lane.index] = lane.action(fast_dqn, observation)
        result = self.pool.step(self.actions)
        for index, lane in enumerate(self.lanes):
            done = bool(result.dones[index])
            lane.record(fast_dqn, observations[index], int(self.actions[index]),
                        float(result.rewards[index]), bool(result.terminals[index]), done)
            if done:
                lane.finished_episodes.append((float(result.episode_returns[index]),
                                               int(result.episode_lengths[index])))
        # After a done the pool's observation is already the next episode's first.
        observations[:] = result.observations

    def close_env(self):
        """Nothing: the FastDQN closes the pool once its threads are joined."""
