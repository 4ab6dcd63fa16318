"""GA3C's agent process: plays its own environment, asks the predictors for every action, and
sends horizon-step experience with its n-step returns to the training queue. No TensorFlow here.

Protocol (ga3c_tf/ipc.py): the agent writes its observation into its row of the shared observation
array and puts its key (generation << 16 | slot) on the prediction pipe; a predictor writes the
reply into the agent's row of the reply board, float64 [model version, value, policy
probabilities...], and wakes it with one byte. Experience items are sequence_item()s.
"""
import os
import queue as queue_lib
import signal
import time
from multiprocessing import shared_memory

import numpy as np

from common.system import processes

SLOT_BITS = 16
MAX_SLOTS = 1 << SLOT_BITS
REPLY_HEADER = 2  # version, value


def make_key(generation, slot):
    return (generation << SLOT_BITS) | slot


def split_key(key):
    """(generation, slot) of a request key."""
    return key >> SLOT_BITS, key & (MAX_SLOTS - 1)


def sample_action(probabilities, uniform):
    """Inverse-CDF sample of one action; what rng.choice(p=...) does, without its checks."""
    cumulative = np.cumsum(probabilities)
    action = int(np.searchsorted(cumulative, uniform * cumulative[-1], side='right'))
    return min(action, len(probabilities) - 1)


def sequence_item(observations, actions, rewards, bootstrap_value, versions):
    """One experience item: the steps of one sequence, with its end marked (sequence_ends 1.0
    at the last step) and its bootstrap value there (end_values); the trainer computes the
    n-step returns (common.learners.losses.sequence_returns)."""
    count = len(actions)
    sequence_ends = np.zeros(count, np.float32)
    sequence_ends[-1] = 1.0
    end_values = np.zeros(count, np.float32)
    end_values[-1] = bootstrap_value
    return (observations, actions, rewards, sequence_ends, end_values, versions)


class _Stopped(Exception):
    """The agent was asked to stop (or its parent is gone)."""


class _Agent:
    """One agent's environment, experience buffer and its ends of the queues."""

    def __init__(self, key, requests, replies, observation_slot, env_config, seed, horizon,
                 training_queue, episode_queue, stop_event, parent_pid, poll_seconds):
        self.key = key
        self.requests = requests
        self.replies = replies
        self.observation_slot = observation_slot
        self.env = env_config.make(seed)
        self.rng = np.random.default_rng(seed)
        self.horizon = horizon
        self.training_queue = training_queue
        self.episode_queue = episode_queue
        self.stop_event = stop_event
        self.parent_pid = parent_pid
        self.poll_seconds = poll_seconds
        shape = (horizon,) + tuple(env_config.observation_shape)
        self.pending_observations = np.zeros(shape, env_config.observation_dtype)
        self.pending_actions = np.zeros(horizon, np.int32)
        self.pending_rewards = np.zeros(horizon, np.float32)
        self.pending_versions = np.zeros(horizon, np.int64)
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
        since = time.perf_counter()
        self.requests.put(self.key)
        # EOFError when stopped or when the server process is gone; counts the wait (section 5.1)
        reply = self.replies.wait(since)
        return reply[REPLY_HEADER:], reply[1], int(reply[0])

    def flush(self, bootstrap_value):
        """Sends the pending steps, bootstrapped from bootstrap_value, to the training queue."""
        count = self.pending
        if count == 0:
            return
        self._put(self.training_queue, sequence_item(
            self.pending_observations[:count].copy(), self.pending_actions[:count].copy(),
            self.pending_rewards[:count].copy(), bootstrap_value,
            self.pending_versions[:count].copy()))
        self.pending = 0

    def run(self):
        observation = self.env.reset()
        while True:
            probabilities, value, version = self.predict(observation)
            if self.pending == self.horizon:
                self.flush(bootstrap_value=value)
            action = sample_action(probabilities, self.rng.random())
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


def run_agent(key, requests, replies, shm_name, observation_array_shape, observation_dtype,
              env_config, seed, horizon, training_queue, episode_queue, stop_event,
              parent_pid, poll_seconds=0.1):
    """Entry point of an agent process; returns when stopped or once parent_pid is gone.

    Stopping flushes what this agent put on the queues (a half-written message would corrupt
    them for the trainers); if the parent dies meanwhile, the orphan watchdog ends the process.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and stops us
    processes.exit_when_orphaned(parent_pid, poll_seconds)
    shm = shared_memory.SharedMemory(name=shm_name)
    observations = np.ndarray(observation_array_shape, observation_dtype, buffer=shm.buf)
    agent = None
    try:
        if os.getppid() != parent_pid or stop_event.is_set():
            raise _Stopped
        try:
            replies.attach()
        except FileNotFoundError:
            if not stop_event.is_set():
                raise
            raise _Stopped from None  # the server closed its board while this agent started
        agent = _Agent(key, requests, replies, observations[split_key(key)[1]], env_config, seed,
                       horizon, training_queue, episode_queue, stop_event, parent_pid,
                       poll_seconds)
        agent.run()
    except (_Stopped, EOFError, BrokenPipeError):
        pass
    finally:
        if agent is not None:
            agent.observation_slot = None
            agent.env.close()
        del observations, agent
        try:
            shm.close()
        except BufferError:  # a view still referenced from a traceback; exiting anyway
            pass
        replies.close()
        requests.close()
