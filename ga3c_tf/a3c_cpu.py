"""The CPU A3C baseline GA3C is compared against (paper section 3.2, Table 2): every agent
process holds its own model replica, plays horizon steps with it, computes the gradients of the
same eq. (5) loss itself and applies them lock-free (Hogwild) to parameters in shared memory with
a shared RMSProp (Mnih et al. 2016's shared-statistics variant), then copies the parameters back.
"""
import itertools
import multiprocessing
import os
import queue as queue_lib
import signal
import time
from multiprocessing import shared_memory

import numpy as np

from common.run import runner
from common.run import scalars
from common.system import devices
from common.system import processes
from common.system import segments
from common.units import async_learners
from common.units import parameter_store
from ga3c_tf import agent as agent_lib

POLL_SECONDS = 0.1
JOIN_SECONDS = 5.0
STEPS, UPDATES = 0, 1  # columns of the per-agent counter array
# A3C agents (batch-1 forward passes, a weight pull per update) measure faster on TF's stock CPU
# kernels than on oneDNN's; GA3CConfig.a3c_onednn picks (bench rows a3c_cpu, a3c_cpu/onednn).
ONEDNN_VARIABLE = 'TF_ENABLE_ONEDNN_OPTS'


class SharedParameters:
    """A flat float32 parameter vector and its RMSProp mean squares in shared memory (the
    creator fills both; a process attaching by name sees what they hold)."""

    def __init__(self, size, name=None):
        nbytes = 2 * size * 4
        self.shm = (segments.create(nbytes) if name is None
                    else shared_memory.SharedMemory(name=name, size=nbytes))
        self.size = size
        self.parameters = np.ndarray((size,), np.float32, buffer=self.shm.buf)
        self.mean_square = np.ndarray((size,), np.float32, buffer=self.shm.buf, offset=size * 4)

    def apply_rmsprop(self, gradient, learning_rate, decay, epsilon, epsilon_inside_sqrt=True):
        """RMSProp on the shared vectors, in place, no lock (Hogwild)."""
        parameter_store.rmsprop_step(self.parameters, self.mean_square, gradient, learning_rate,
                                     decay, epsilon, epsilon_inside_sqrt)

    def close(self, unlink=False):
        self.parameters = self.mean_square = None
        processes.release_shared_memory(self.shm, unlink=unlink)


def _run_agent(index, config, shm_name, num_parameters, counters_name, num_slots, seed,
               episode_queue, stop_event, parent_pid, start_steps):
    """Entry point of an A3C agent process: its own replica, its own gradients; the learning
    rate follows the run's env steps, start_steps (those of earlier sessions) included."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    processes.exit_when_orphaned(parent_pid, POLL_SECONDS)
    import common  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    tf.config.threading.set_intra_op_parallelism_threads(1)  # one core per agent, as A3C
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from ga3c_tf import learner as learner_lib  # pylint: disable=import-outside-toplevel
    shared = SharedParameters(num_parameters, name=shm_name)
    counters_shm = shared_memory.SharedMemory(name=counters_name)
    counters = np.ndarray((num_slots, 2), np.int64, buffer=counters_shm.buf)
    try:
        replica = learner_lib.build_learner(config)
        variables = replica.model.trainable_variables

        def pull():
            async_learners.assign_flat(variables, shared.parameters)

        schedule = config.learning_rate_schedule()
        env = config.env_config.make(seed)
        rng = np.random.default_rng(seed)
        horizon = config.horizon
        observations = np.zeros((horizon,) + tuple(config.env_config.observation_shape),
                                config.env_config.observation_dtype)
        actions = np.zeros(horizon, np.int32)
        rewards = np.zeros(horizon, np.float32)
        observation = env.reset()
        while not stop_event.is_set() and os.getppid() == parent_pid:
            pull()
            count, bootstrap = 0, 0.0
            while count < horizon:
                probabilities, _ = replica.predict(observation[None])
                action = agent_lib.sample_action(probabilities.numpy()[0], rng.random())
                observations[count] = observation
                observation, reward, terminal, done = env.step(action)
                actions[count], rewards[count] = action, reward
                count += 1
                if done:
                    episode_queue.put((float(env.episode_return), int(env.episode_length)))
                    observation = env.reset()
                if terminal:
                    break
            else:
                bootstrap = float(replica.predict(observation[None])[1].numpy()[0])
            item = agent_lib.sequence_item(observations[:count], actions[:count],
                                           rewards[:count], bootstrap, None)
            gradient = replica.flat_gradients(*item[:5]).numpy()
            total_steps = start_steps + int(counters[:, STEPS].sum())
            shared.apply_rmsprop(gradient, schedule.value_at(total_steps), config.rmsprop_decay,
                                 config.rmsprop_epsilon, config.rmsprop_epsilon_inside_sqrt)
            counters[index, STEPS] += count
            counters[index, UPDATES] += 1
    finally:
        del counters
        shared.close()
        try:
            counters_shm.close()
        except BufferError:
            pass


class OptimizerState:
    """What a checkpoint of the baseline holds besides the model, as tf.Variables: the shared
    RMSProp mean squares (starting where GA3C's optimizer starts its own) and the number of
    updates, so that a resumed run goes on with them."""

    def __init__(self, num_parameters, initial_mean_square):
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        self.mean_square = tf.Variable(tf.fill([num_parameters], float(initial_mean_square)),
                                       trainable=False, name='rmsprop_mean_square')
        self.updates = tf.Variable(0, dtype=tf.int64, trainable=False, name='updates')

    def trackables(self):
        return {'rmsprop_mean_square': self.mean_square, 'updates': self.updates}


def num_parameters(learner):
    return sum(int(np.prod(variable.shape)) for variable in learner.model.trainable_variables)


class A3CServer:
    """The A3C agent processes and the shared parameters; close() leaves nothing behind.

    The shared parameters start from learner's model, the RMSProp mean squares and the update
    count from state (an OptimizerState; without one, where learner's optimizer starts its mean
    squares, and 0); start_steps are the env steps of earlier sessions, for the learning-rate
    schedule.
    """

    def __init__(self, config, learner, seed=0, log=print, state=None, start_steps=0):
        self.config = config
        self.learner = learner
        self.log = log
        self.state = state
        self.start_steps = start_steps
        self._context = multiprocessing.get_context('spawn')
        self._variables = learner.model.trainable_variables
        self.shared = SharedParameters(num_parameters(learner))
        self.shared.parameters[:] = async_learners.flat_values(self._variables)
        self.shared.mean_square.fill(learner.optimizer.initial_mean_square)
        self._start_updates = 0
        if state is not None:
            self.shared.mean_square[:] = state.mean_square.numpy()
            self._start_updates = int(state.updates.numpy())
        self._slots = config.max_agents
        self._counters_shm = segments.create(self._slots * 2 * 8)
        self.counters = np.ndarray((self._slots, 2), np.int64, buffer=self._counters_shm.buf)
        self.counters.fill(0)
        self.episode_queue = self._context.Queue()
        self.agents = {}  # slot -> (process, stop_event)
        self._seeds = itertools.count(seed)
        self._closed = False

    def add_agent(self):
        slot = min(set(range(self._slots)) - set(self.agents))
        stop_event = self._context.Event()
        process = self._context.Process(
            target=_run_agent, name=f'A3C-agent-{slot}', daemon=True,
            args=(slot, self.config, self.shared.shm.name, self.shared.size,
                  self._counters_shm.name, self._slots, next(self._seeds), self.episode_queue,
                  stop_event, os.getpid(), self.start_steps))
        self.agents[slot] = (process, stop_event)
        # A spawned child inherits os.environ as it is at start(), and TF reads this at import.
        previous = os.environ.get(ONEDNN_VARIABLE)
        os.environ[ONEDNN_VARIABLE] = '1' if self.config.a3c_onednn else '0'
        try:
            # The paper's CPU baseline: an agent sees no GPU (nor holds a CUDA context on one).
            processes.start_process(process, gpus=devices.NO_GPU)
        finally:
            if previous is None:
                os.environ.pop(ONEDNN_VARIABLE)
            else:
                os.environ[ONEDNN_VARIABLE] = previous

    def apply(self, num_agents):
        while len(self.agents) < num_agents:
            self.add_agent()

    def check_agents(self):
        from ga3c_tf import server as server_lib  # pylint: disable=import-outside-toplevel
        for slot, (process, _) in list(self.agents.items()):
            if process.is_alive():
                continue
            message = f'agent {slot} (pid {process.pid}) {server_lib.describe_exit(process)}'
            del self.agents[slot]
            if self.config.on_agent_death == 'stop':
                raise server_lib.AgentDiedError(message)
            self.log(f'{message}; replacing it')
            self.add_agent()

    def counts(self):
        """Env steps of this session and updates of the whole run."""
        return {'predictions': int(self.counters[:, STEPS].sum()),
                'updates': self._start_updates + int(self.counters[:, UPDATES].sum())}

    def pull_into_learner(self):
        """Copies the shared parameters into the main process's model, and the mean squares and
        update count into state (to log or save)."""
        async_learners.assign_flat(self._variables, self.shared.parameters.copy())
        if self.state is not None:
            self.state.mean_square.assign(self.shared.mean_square.copy())
            scalars.assign(self.state.updates, self.counts()['updates'])

    def drain_episodes(self):
        items = []
        while True:
            try:
                items.append(self.episode_queue.get_nowait())
            except (queue_lib.Empty, OSError, ValueError, EOFError):
                return items

    def close(self):
        """Ends the agents and frees the shared memory; a Ctrl-C meanwhile waits for it."""
        if self._closed:
            return
        self._closed = True
        with processes.held_interrupts():
            try:
                self._end_agents()
            finally:
                self.counters = None
                self.shared.close(unlink=True)
                processes.release_shared_memory(self._counters_shm)

    def _end_agents(self):
        for process, stop_event in self.agents.values():
            stop_event.set()
        deadline = time.monotonic() + JOIN_SECONDS
        for process, _ in self.agents.values():
            while process.is_alive() and time.monotonic() < deadline:
                self.drain_episodes()
                process.join(timeout=0.05)
            processes.end_process(process)
            process.close()
        self.agents.clear()
        self.drain_episodes()
        self.episode_queue.close()
        self.episode_queue.join_thread()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


A3C_COLUMNS = ('pps', 'tps', 'frames_per_sec', 'num_agents')


def train(config, run_dir):
    """Runs the CPU A3C baseline until config.total_steps, in the common run format, resuming
    from run_dir's checkpoint (model, shared RMSProp statistics, counters) if there is one."""
    from common.run import tracker as tracker_lib  # pylint: disable=import-outside-toplevel
    from ga3c_tf import learner as learner_lib  # pylint: disable=import-outside-toplevel
    from ga3c_tf import loop as loop_lib  # pylint: disable=import-outside-toplevel
    learner = learner_lib.build_learner(config)
    state = OptimizerState(num_parameters(learner), learner.optimizer.initial_mean_square)
    tracker = tracker_lib.tracker_for(run_dir, config, A3C_COLUMNS,
                                      {'model': learner.model, **state.trackables()})
    def unit_of(server):
        server.apply(config.num_agents)
        return A3CCPUUnit(server, tracker_lib.frames_per_step(config.env_config),
                          loop_lib.take_progress)

    # A resumed run continues with fresh environments, seeded apart from the first session.
    with segments.scope():  # whatever an ending leaves of the run's shared memory goes
        return runner.train(
            tracker, lambda: A3CServer(config, learner, seed=config.seed + tracker.env_steps,
                                       state=state, start_steps=tracker.env_steps), unit_of)


class A3CCPUUnit(runner.Unit):
    """The main process of the CPU A3C baseline: polls the agent processes' counts every
    poll_seconds; the shared parameters come into the learner's model to be saved or logged."""

    def __init__(self, server, frames_per_step, take_progress, poll_seconds=0.05):
        self.server = server
        self.frames_per_step = frames_per_step
        self.take_progress = take_progress
        self.poll_seconds = poll_seconds
        self.last = server.counts()
        self.interval_start = dict(self.last)

    def advance(self, env_steps):
        time.sleep(self.poll_seconds)
        steps, updates, episodes, self.last = self.take_progress(self.server, self.last)
        return steps, updates, episodes

    def updates(self):
        return self.last['updates']

    def settle(self):
        self.server.pull_into_learner()

    finish = settle  # what runner.train saves, at the end or on Ctrl-C

    def row(self, seconds):
        steps = self.last['predictions'] - self.interval_start['predictions']
        row = {'pps': steps / seconds, 'frames_per_sec': steps * self.frames_per_step / seconds,
               'tps': (self.last['updates'] - self.interval_start['updates']) / seconds,
               'num_agents': len(self.server.agents)}
        self.interval_start = dict(self.last)
        return row
