"""Fast DQN's actor threads: each owns one environment and takes one step per round (the
paper's "samplers"; here "sampler" is the object that fills a rollout, common/units/samplers.py)."""
import sys
import threading
import time

from absl import logging
import numpy as np

from common.replay import staging as staging_lib
from common.run import processes


def lower_thread_priority(increment):
    """Makes the calling thread `increment` nicer (Linux); elsewhere it changes nothing."""
    warning = processes.lower_priority(threading.get_native_id(), increment)
    if warning and sys.platform.startswith('linux'):
        logging.warning('%s (%s)', warning, threading.current_thread().name)


class ActorThread(threading.Thread):
    """One environment stepped one step per round; writes its state into a shared row."""

    def __init__(self, index, fast_dqn, env, seed):
        super().__init__(name=f'dqn-actor-{index}', daemon=True)
        self.index = index
        self.fast_dqn = fast_dqn
        self.env = env
        self.rng = np.random.default_rng([seed, index])
        self.num_actions = fast_dqn.num_actions
        self.staging = staging_lib.StagingBuffer(fast_dqn.staging_length,
                                                 fast_dqn.replay.frame_shape,
                                                 fast_dqn.replay.observation_dtype)
        self.episode_start = True
        self.finished_episodes = []  # (score, length) since the last drain
        self.error = None
        self.error_at = None  # time.monotonic() of the failure: the first one is the cause
        fast_dqn.observations[index] = env.reset()

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

    def step(self):
        """One epsilon-greedy (or, while prepopulating, uniformly random) step."""
        fast_dqn = self.fast_dqn
        if self.index == 0 and fast_dqn.config.synchronized:
            if not fast_dqn.random_actions:
                # The round's one batched inference: actor 0 goes first, the others still wait.
                fast_dqn.greedy_actions[:] = fast_dqn.act_fn(fast_dqn.observations).numpy()
            if fast_dqn.gate.order == 'led':
                fast_dqn.gate.lead_done()
        observation = fast_dqn.observations[self.index]
        if fast_dqn.random_actions or self.rng.random() < fast_dqn.epsilon:
            action = int(self.rng.integers(self.num_actions))
        elif fast_dqn.config.synchronized:
            action = int(fast_dqn.greedy_actions[self.index])
        else:
            action = int(fast_dqn.act_fn(observation[None]).numpy()[0])
        next_observation, reward, terminal, done = self.env.step(action)
        self.staging.add(fast_dqn.replay.newest_frame(observation), action, reward, terminal,
                         self.episode_start)
        self.episode_start = bool(done)
        if done:
            self.finished_episodes.append((float(self.env.episode_return),
                                           int(self.env.episode_length)))
            next_observation = self.env.reset()
        observation[...] = next_observation
