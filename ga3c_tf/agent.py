"""GA3C's agent process: plays its own environment, asks the predictors for every action, and
sends t_max-step experience with its n-step returns to the training queue. No TensorFlow here.

Protocol: the agent writes its observation into its row of the shared observation array and puts
the key (sequence << 16 | slot) on the prediction queue; the reply on its pipe is float64
[sequence, model version, value, policy probabilities...]. Experience items are
(observations, actions, returns, versions).
"""
import os
import queue as queue_lib
import signal
from multiprocessing import shared_memory

import numpy as np

SLOT_BITS = 16
MAX_SLOTS = 1 << SLOT_BITS
REPLY_HEADER = 3  # sequence, version, value


def discounted_returns(rewards, bootstrap_value, gamma):
    """R_t = r_t + gamma * R_{t+1}, R_n = bootstrap_value, over one agent's pending rewards."""
    returns = np.empty(len(rewards), np.float32)
    running = float(bootstrap_value)
    for index in range(len(rewards) - 1, -1, -1):
        running = rewards[index] + gamma * running
        returns[index] = running
    return returns


class _Stopped(Exception):
    """The agent was asked to stop (or its parent is gone)."""


class _Agent:
    """One agent's environment, experience buffer and its two sides of the queues."""

    def __init__(self, slot, connection, observations, env_config, seed, t_max, gamma,
                 prediction_queue, training_queue, episode_queue, stop_event, poll_seconds):
        self.slot = slot
        self.connection = connection
        self.observation_slot = observations[slot]
        self.env = env_config.make(seed)
        self.num_actions = env_config.num_actions()
        self.rng = np.random.default_rng(seed)
        self.t_max = t_max
        self.gamma = gamma
        self.prediction_queue = prediction_queue
        self.training_queue = training_queue
        self.episode_queue = episode_queue
        self.stop_event = stop_event
        self.poll_seconds = poll_seconds
        self.parent_pid = os.getppid()
        # A random start, so that a reply meant for this slot's previous agent never matches.
        self.sequence = int(self.rng.integers(1 << 39))
        shape = (t_max,) + tuple(env_config.observation_shape)
        self.pending_observations = np.zeros(shape, env_config.observation_dtype)
        self.pending_actions = np.zeros(t_max, np.int32)
        self.pending_rewards = np.zeros(t_max, np.float32)
        self.pending_versions = np.zeros(t_max, np.int64)
        self.pending = 0

    def _check_running(self):
        if self.stop_event.is_set() or os.getppid() != self.parent_pid:
            raise _Stopped

    def _put(self, target_queue, item):
        while True:
            try:
                target_queue.put(item, timeout=self.poll_seconds)
                return
            except queue_lib.Full:
                self._check_running()

    def predict(self, observation):
        """(probabilities, value, model version) for observation, from a predictor thread."""
        self.observation_slot[...] = observation
        self.sequence = (self.sequence + 1) % (1 << 40)
        self._put(self.prediction_queue, (self.sequence << SLOT_BITS) | self.slot)
        while True:
            while not self.connection.poll(self.poll_seconds):
                self._check_running()
            reply = np.frombuffer(self.connection.recv_bytes(), np.float64)
            if int(reply[0]) == self.sequence:  # else a reply meant for a stopped predecessor
                return reply[REPLY_HEADER:], reply[2], int(reply[1])

    def flush(self, bootstrap_value):
        """Sends the pending steps with their n-step returns to the training queue."""
        count = self.pending
        if count == 0:
            return
        returns = discounted_returns(self.pending_rewards[:count], bootstrap_value, self.gamma)
        self._put(self.training_queue, (self.pending_observations[:count].copy(),
                                        self.pending_actions[:count].copy(), returns,
                                        self.pending_versions[:count].copy()))
        self.pending = 0

    def run(self):
        observation = self.env.reset()
        while True:
            probabilities, value, version = self.predict(observation)
            if self.pending == self.t_max:
                self.flush(bootstrap_value=value)
            action = int(self.rng.choice(self.num_actions, p=probabilities / probabilities.sum()))
            index = self.pending
            self.pending_observations[index] = observation
            next_observation, reward, terminal, done = self.env.step(action)
            self.pending_actions[index] = action
            self.pending_rewards[index] = reward
            self.pending_versions[index] = version
            self.pending += 1
            if terminal:
                self.flush(bootstrap_value=0.0)
            if done:
                self._put(self.episode_queue, (float(self.env.episode_return),
                                               int(self.env.episode_length)))
                next_observation = self.env.reset()
            observation = next_observation


def run_agent(slot, connection, shm_name, observation_array_shape, observation_dtype,
              env_config, seed, t_max, gamma, prediction_queue, training_queue, episode_queue,
              stop_event, poll_seconds=0.1):
    """Entry point of an agent process; returns when stop_event is set or the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    parent_pid = os.getppid()
    shm = shared_memory.SharedMemory(name=shm_name)
    observations = np.ndarray(observation_array_shape, observation_dtype, buffer=shm.buf)
    agent = None
    try:
        agent = _Agent(slot, connection, observations, env_config, seed, t_max, gamma,
                       prediction_queue, training_queue, episode_queue, stop_event, poll_seconds)
        agent.run()
    except (_Stopped, EOFError, BrokenPipeError):
        pass
    finally:
        if agent is not None:
            agent.observation_slot = None
            agent.env.close()
        del observations, agent
        if os.getppid() != parent_pid:
            # Nobody reads the queues any more (siblings hold the read ends, so a feeder thread
            # would block forever on a full pipe): exit without flushing them.
            for abandoned in (prediction_queue, training_queue, episode_queue):
                abandoned.cancel_join_thread()
        try:
            shm.close()
        except BufferError:  # a view still referenced from a traceback; exiting anyway
            pass
        connection.close()
