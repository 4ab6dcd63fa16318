"""GA3C's server: the queues, the agent processes, the predictor and trainer threads, and the
main loop that logs, checkpoints and anneals NP/NT/NA (paper section 4, Figure 1b).
"""
import functools
import itertools
import multiprocessing
import os
import queue as queue_lib
import signal
import threading
import time

import numpy as np

from common.system import processes
from common.system import segments
from ga3c_tf import agent as agent_lib
from ga3c_tf import buckets
from ga3c_tf import ipc
from ga3c_tf import learner as learner_lib
from ga3c_tf import predictor as predictor_lib
from ga3c_tf import trainer as trainer_lib

POLL_SECONDS = 0.05       # how often threads waiting on a queue look at their stop flag
AGENT_POLL_SECONDS = 0.1  # the same for agent processes
JOIN_SECONDS = 5.0        # how long close() waits for agents before terminating them


class AgentDiedError(processes.WorkerDiedError):
    """An agent process ended without being asked to (on_agent_death='stop')."""


class _AgentHandle:
    """One agent process with its stop flag."""

    def __init__(self, process, stop_event):
        self.process = process
        self.stop_event = stop_event


def describe_exit(process):
    code = process.exitcode
    if code is not None and code < 0:
        return f'was killed by signal {signal.Signals(-code).name}'
    return f'exited with code {code}'


_PREDICTOR_COUNTS = ('predictions', 'batches', 'request_call_seconds')
_TRAINER_COUNTS = ('updates', 'samples', 'update_seconds', 'assembly_seconds')


def _trainer_count(thread, name):
    """A trainer thread's count; its batcher's for the seconds of assembling batches."""
    return thread.batcher.assembly_seconds if name == 'assembly_seconds' else getattr(thread, name)


class GA3CServer:
    """Owns every queue, process and thread of a GA3C run; close() leaves none behind."""

    def __init__(self, config, learner, seed=0, log=print):
        self.config = config
        self.learner = learner
        self.log = log
        env_config = config.env_config
        self._context = multiprocessing.get_context('spawn')
        self._make_queues()
        self._observation_array_shape = (config.max_agents,) + tuple(
            env_config.observation_shape)
        self._observation_dtype = np.dtype(env_config.observation_dtype)
        size = int(np.prod(self._observation_array_shape)) * self._observation_dtype.itemsize
        self._shm = segments.create(max(size, 1))
        self.observations = np.ndarray(self._observation_array_shape, self._observation_dtype,
                                       buffer=self._shm.buf)
        self._seeds = itertools.count(seed)
        self._generations = itertools.count(1)  # tells a slot's successive agents apart
        self.agents = {}       # slot -> _AgentHandle
        self.predictors = []
        self.trainers = []
        self._retired = dict.fromkeys(_PREDICTOR_COUNTS + _TRAINER_COUNTS, 0)
        self._lock = threading.Lock()
        self.updates = int(learner.optimizer.iterations.numpy())  # the model version
        self._lags = []
        # Batches padded to a few sizes (ga3c_tf/buckets.py): None where they are not.
        self._pads = learner_lib.pads_batches(config)
        self._prediction_buckets = self._training_buckets = None
        if self._pads:
            self._prediction_buckets = buckets.bucket_sizes(config.prediction_batch_size)
            self._training_buckets = buckets.bucket_sizes(buckets.largest_training_batch(
                config.training_min_batch_size, config.horizon))
        self._signature = learner_lib.train_signature(config, padded=self._pads)
        self._closed = False

    def _make_queues(self):
        config = self.config
        self.prediction_queue = ipc.RequestPipe(self._context, config.prediction_queue_size)
        self.replies = ipc.ReplyBoard(self._context, config.max_agents,
                                      agent_lib.REPLY_HEADER + config.env_config.num_actions())
        self.training_queue = self._context.Queue(config.training_queue_size)
        self.episode_queue = self._context.Queue()

    # ---- agents ---------------------------------------------------------------------------
    def add_agent(self):
        slot = min(set(range(self.config.max_agents)) - set(self.agents))
        generation = next(self._generations)
        replies = self.replies.open(slot, generation)
        requests = self.prediction_queue.writer()
        stop_event = self._context.Event()
        config = self.config
        process = self._context.Process(
            target=agent_lib.run_agent, name=f'GA3C-agent-{slot}', daemon=True,
            args=(agent_lib.make_key(generation, slot), requests, replies, self._shm.name,
                  self._observation_array_shape, self._observation_dtype, config.env_config,
                  next(self._seeds), config.horizon, self.training_queue,
                  self.episode_queue, stop_event, os.getpid(), AGENT_POLL_SECONDS))
        self.agents[slot] = _AgentHandle(process, stop_event)
        processes.start_process(process)
        replies.close()  # only the agent holds its read end now
        return slot

    def remove_agent(self, slot=None):
        """Stops one agent (the highest slot by default) and waits for it."""
        slot = max(self.agents) if slot is None else slot
        handle = self.agents.pop(slot)
        handle.stop_event.set()
        self.replies.close_row(slot)  # wakes it with end-of-file if it waits for a reply
        self._finish_agents([handle])

    def _finish_agents(self, handles, drain_all=False):
        deadline = time.monotonic() + JOIN_SECONDS
        for handle in handles:
            handle.stop_event.set()
        for handle in handles:
            # Keep the queues moving so that an agent's queue feeder can flush and exit.
            while handle.process.is_alive() and time.monotonic() < deadline:
                self._drain(self.episode_queue)
                if drain_all:
                    self._drain(self.training_queue)
                handle.process.join(timeout=POLL_SECONDS)
            processes.end_process(handle.process)
            handle.process.close()

    @staticmethod
    def _drain(source):
        items = []
        while True:
            try:
                items.append(source.get_nowait())
            except (queue_lib.Empty, OSError, ValueError, EOFError):
                return items

    def check_agents(self):
        """Reports agents that died; ends the run or restarts the actor side as configured.

        A SIGKILLed agent can die holding a queue's cross-process write lock or halfway through
        writing an experience batch, which would block every other writer or a trainer for
        good; so 'replace' rebuilds the queues, threads and agents rather than one agent.
        """
        dead = [(slot, handle) for slot, handle in self.agents.items()
                if not handle.process.is_alive()]
        if not dead:
            return
        messages = [f'agent {slot} (pid {handle.process.pid}) {describe_exit(handle.process)}'
                    for slot, handle in dead]
        if self.config.on_agent_death == 'stop':
            for slot, _ in dead:
                del self.agents[slot]
                self.replies.close_row(slot)
            raise AgentDiedError('; '.join(messages))
        self.log(f"{'; '.join(messages)}; replacing it: restarting the agents, predictors and "
                 f'trainers on fresh queues')
        self.restart()

    def restart(self):
        """Stops every agent and thread, replaces the queues and starts the same (NP, NT, NA)."""
        settings = self.settings
        self._stop_actors()
        self._make_queues()
        self.apply(settings)

    def _stop_actors(self):
        """Ends agents, then threads, then queues, in the order that lets nothing block: with
        every agent gone and the parent's write ends closed, a thread stuck reading a
        half-written message reads end-of-file instead."""
        for handle in self.agents.values():
            handle.stop_event.set()
        self.replies.close()  # wakes every agent waiting for a prediction with end-of-file
        threads = self.predictors + self.trainers
        for thread in threads:
            thread.stop()
        self._finish_agents(list(self.agents.values()), drain_all=True)
        self.agents.clear()
        queues = (self.training_queue, self.episode_queue)
        for source in queues:
            source._writer.close()  # pylint: disable=protected-access
        for thread in threads:
            thread.join(timeout=JOIN_SECONDS)
        while self.predictors:
            self._retire_predictor(self.predictors.pop())
        while self.trainers:
            self._retire_trainer(self.trainers.pop())
        self.prediction_queue.close()
        for source in queues:
            self._drain(source)
            source.close()
            source.join_thread()

    # ---- predictors -----------------------------------------------------------------------
    def _gather(self, keys):
        """The requesting agents' observations, zero rows after them up to the bucket when
        batches are padded (_deliver hands back the first len(keys) predictions)."""
        slots = (np.asarray(keys, np.uint64) & (agent_lib.MAX_SLOTS - 1)).astype(np.intp)
        if self._prediction_buckets is None:
            return self.observations[slots]
        size = buckets.bucket_of(len(slots), self._prediction_buckets)
        batch = np.zeros((size,) + self.observations.shape[1:], self.observations.dtype)
        np.take(self.observations, slots, axis=0, out=batch[:len(slots)])
        return batch

    def _predict(self, observations):
        version = self.updates
        probabilities, values = self.learner.predict(observations)
        return version, probabilities.numpy(), values.numpy()

    def _deliver(self, keys, outputs):
        version, probabilities, values = outputs
        probabilities, values = probabilities[:len(keys)], values[:len(keys)]  # no padding
        replies = np.empty((len(keys), agent_lib.REPLY_HEADER + probabilities.shape[1]),
                           np.float64)
        replies[:, 0] = version
        replies[:, 1] = values
        replies[:, agent_lib.REPLY_HEADER:] = probabilities
        generations, slots = zip(*(agent_lib.split_key(key) for key in keys))
        # Agents removed meanwhile (or their requests left over) are skipped by the board.
        self.replies.deliver(slots, generations, replies)

    def add_predictor(self):
        thread = predictor_lib.BatchingPredictor(
            self.prediction_queue, self._gather, self._predict, self._deliver,
            self.config.prediction_batch_size, poll_seconds=POLL_SECONDS,
            name=f'GA3C-predictor-{len(self.predictors)}')
        self.predictors.append(thread)
        thread.start()

    def remove_predictor(self):
        thread = self.predictors.pop()
        thread.stop()
        thread.join()
        self._retire_predictor(thread)

    def _retire_predictor(self, thread):
        for name in _PREDICTOR_COUNTS:
            self._retired[name] += getattr(thread, name)

    # ---- trainers -------------------------------------------------------------------------
    def _train(self, observations, actions, rewards, sequence_ends, end_values, versions,
               num_valid=None):
        """One update on a batch of sequences; num_valid: its real rows, where it is padded."""
        with self._lock:
            version_now = self.updates
        if num_valid is None:
            self.learner.train_on_sequences(observations, actions, rewards, sequence_ends,
                                            end_values)
        else:
            self.learner.train_on_padded_sequences(observations, actions, rewards,
                                                   sequence_ends, end_values, num_valid)
            versions = np.asarray(versions)[:int(num_valid)]
        lags = version_now - np.asarray(versions)
        with self._lock:
            self.updates += 1
            self._lags.append((float(lags.sum()), len(lags), int(lags.max())))

    def add_trainer(self):
        pad = None if self._training_buckets is None else functools.partial(
            buckets.pad_sequences, sizes=self._training_buckets)
        batcher = trainer_lib.ExperienceBatcher(
            self.training_queue, self.config.training_min_batch_size, POLL_SECONDS, pad=pad)
        thread = trainer_lib.TrainerThread(
            batcher, self._train, input_signature=self._signature,
            use_tf_data=self.config.trainer_input == 'tf_data',
            name=f'GA3C-trainer-{len(self.trainers)}')
        self.trainers.append(thread)
        thread.start()

    def remove_trainer(self):
        thread = self.trainers.pop()
        thread.stop()
        thread.join()
        self._retire_trainer(thread)

    def _retire_trainer(self, thread):
        for name in _TRAINER_COUNTS:
            self._retired[name] += _trainer_count(thread, name)

    # ---- the whole ------------------------------------------------------------------------
    @property
    def settings(self):
        """(NP, NT, NA) now."""
        return (len(self.predictors), len(self.trainers), len(self.agents))

    def apply(self, settings):
        """Adds or removes predictors, trainers and agents until (NP, NT, NA) == settings."""
        num_predictors, num_trainers, num_agents = settings
        while len(self.predictors) < num_predictors:
            self.add_predictor()
        while len(self.predictors) > num_predictors:
            self.remove_predictor()
        while len(self.trainers) < num_trainers:
            self.add_trainer()
        while len(self.trainers) > num_trainers:
            self.remove_trainer()
        while len(self.agents) < num_agents:
            self.add_agent()
        while len(self.agents) > num_agents:
            self.remove_agent()

    def check_threads(self):
        """Raises RuntimeError if a predictor or trainer thread died of an exception."""
        for thread in self.predictors + self.trainers:
            if thread.error is not None:
                raise RuntimeError(f'{thread.name} failed:\n{thread.error}')

    def counts(self):
        """Cumulative counts since the server started: predictions, prediction batches, the
        seconds of requests inside model calls, updates, trained samples, seconds inside train
        calls and assembling their batches; and the agents' waits for replies (seconds,
        count), section 5.1's profile."""
        counts = dict(self._retired)
        for name in _PREDICTOR_COUNTS:
            counts[name] += sum(getattr(thread, name) for thread in self.predictors)
        for name in _TRAINER_COUNTS:
            counts[name] += sum(_trainer_count(thread, name) for thread in self.trainers)
        counts['wait_seconds'], counts['waits'] = self.replies.wait_totals()
        return counts

    def take_lags(self):
        """(mean, max) policy lag in updates over the experience trained since the last call;
        (None, None) if there was none."""
        with self._lock:
            lags, self._lags = self._lags, []
        samples = sum(count for _, count, _ in lags)
        if not samples:
            return None, None
        return sum(total for total, _, _ in lags) / samples, max(top for _, _, top in lags)

    def queue_sizes(self):
        return self.prediction_queue.qsize(), self.training_queue.qsize()

    def drain_episodes(self):
        return self._drain(self.episode_queue)

    def close(self):
        """Stops agents, threads and queues and frees the shared memory; safe to call twice.
        A Ctrl-C meanwhile (a finished run closing) waits for the end of it."""
        if self._closed:
            return
        self._closed = True
        with processes.held_interrupts():
            try:
                self._stop_actors()
            finally:
                self.observations = None
                processes.release_shared_memory(self._shm)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
