"""Asynchronous actor-learners (Mnih et al. 2016's word), each in its own learner process,
updating one central parameter store (Stooke & Abbeel 2018, section 5.1: every actor-learner
computes its gradient locally, applies the update rule to the central parameters under per-chunk
locks and goes on sampling with the result; the optimizer statistics are central too, as in Mnih
et al. 2016). A3C and APPO are this with different actor-learners. The main process only counts,
logs and checkpoints, as the run call's unit (AsyncUnit).

An actor-learner comes from open_actor_learner(config, store, seed, index), a picklable callable
returning a context manager (it owns the actor-learner's environment pool) whose value has
iterate() -> (env_steps, episodes,
stats): one sampling-and-update round, episodes as (score, length) pairs, stats a dict of floats
holding at least 'updates' (central updates applied) and 'policy_lag'.
"""
import multiprocessing
import os
import queue as queue_lib
import signal
import sys
import time

import numpy as np
import tensorflow as tf

from common.run import runner
from common.run import scalars
from common.run import tracker as tracker_lib
from common.system import devices
from common.system import processes
from common.system import segments
from common.system.processes import ON_LEARNER_DEATH
from common.units import parameter_store

POLL_SECONDS = 0.5
REPORT_WAIT_SECONDS = 0.1
JOIN_SECONDS = 30.0  # one iteration of a PPO actor-learner on a busy CPU takes seconds
TERMINATE_SECONDS = 10.0  # then SIGTERM: the learner closes its pool and exits, or is killed


def flat_values(variables):
    """The values of variables laid end to end, as one float32 vector."""
    return np.concatenate([variable.numpy().reshape(-1) for variable in variables]).astype(
        np.float32)


def assign_flat(variables, flat):
    """Assigns consecutive pieces of the flat vector to variables (their shapes)."""
    start = 0
    for variable in variables:
        size = int(np.prod(variable.shape))
        variable.assign(flat[start:start + size].reshape(variable.shape))
        start += size


def _learner_main(index, open_actor_learner, config, handle, seed, reports, stop_event, parent_pid,
                  segment_prefix, gpu_memory_limit_mb=None):
    """A learner process: runs its actor-learner until stop_event; a failure is reported in one line
    (then exit status 1) for the main process to end the run with. Its shared memory (its
    pool's) is named under segment_prefix, for the main process to remove if it dies. It sees
    the GPU LearnerProcesses gave it, bounded to gpu_memory_limit_mb where it shares it."""
    segments.adopt(segment_prefix)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process stops the learners
    # Ended by the main process (a learner slower than JOIN_SECONDS to stop): close the pool.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    processes.exit_when_orphaned(parent_pid, POLL_SECONDS)
    devices.limit_gpu_memory(gpu_memory_limit_mb)  # before any op
    store = parameter_store.ParameterStore.attach(handle)
    try:
        with open_actor_learner(config, store, seed, index) as actor_learner:
            while not stop_event.is_set():
                reports.put((index,) + tuple(actor_learner.iterate()))
    except Exception as error:  # pylint: disable=broad-except
        lines = str(error).strip().splitlines()
        reports.put((index, None, f'{type(error).__name__}: {lines[0] if lines else ""}', None))
        reports.close()
        reports.join_thread()
        sys.exit(1)
    finally:
        store.close()


class LearnerProcesses:
    """num_actor_learners processes running open_actor_learner's actor-learners on the store of
    handle; close() (or leaving the with block) stops and ends them all. A learner that fails or
    dies ends the run (on_death 'stop'), or is left out with a message while others remain
    ('continue'; the store frees the locks it held: common/units/parameter_store.py). The
    shared memory a learner created is removed here once it has exited: a SIGKILLed learner
    removes nothing. Learner i computes on GPU i where there are as many GPUs as learners
    (section 4.3: a learner per device), else GPUs are shared, shared_gpu_memory_mb each
    (devices.learner_gpus); on the CPU on a machine without GPUs."""

    def __init__(self, open_actor_learner, config, handle, num_actor_learners, seed, on_death='stop',
                 shared_gpu_memory_mb=devices.SHARED_GPU_MEMORY_MB):
        if on_death not in ON_LEARNER_DEATH:
            raise ValueError(f'on_death={on_death!r}; allowed: {", ".join(ON_LEARNER_DEATH)}')
        gpus = devices.learner_gpus(num_actor_learners, shared_gpu_memory_mb)
        context = multiprocessing.get_context('spawn')
        self.reports = context.Queue()
        self.stop_event = context.Event()
        self.processes = []
        self.on_death = on_death
        self.lost = set()  # indices of the learners left out
        self._prefixes = []  # each learner's segment names start with its prefix
        self._removed = set()  # lost learners whose segments are removed
        self._closed = False
        try:
            for index in range(num_actor_learners):
                self._prefixes.append(segments.child_prefix())
                # Not daemonic: each learner starts its own environment worker processes.
                process = context.Process(
                    target=_learner_main, name=f'learner-{index}', daemon=False,
                    args=(index, open_actor_learner, config, handle, seed + 1_000_003 * index,
                          self.reports, self.stop_event, os.getpid(), self._prefixes[-1],
                          gpus[index].memory_limit_mb))
                processes.start_process(process, gpus=gpus[index].visible)
                self.processes.append(process)
        except BaseException:
            self.close()
            raise

    def take_reports(self, wait_seconds=REPORT_WAIT_SECONDS):
        """The reports in the queue (waiting up to wait_seconds for the first). A learner's
        failure, or a learner that died silently, raises WorkerDiedError naming it, unless
        on_death is 'continue' and other learners remain: then it is left out with a line."""
        reports = []
        try:
            reports.append(self.reports.get(timeout=wait_seconds))
            while True:
                reports.append(self.reports.get_nowait())
        except queue_lib.Empty:
            pass
        for index, steps, detail, _ in reports:
            if steps is None and index not in self.lost:
                self._lose(index, f'learner {index} failed: {detail}')
        for index, process in enumerate(self.processes):
            if index not in self.lost and not process.is_alive():
                self._lose(index, f'learner {index} (pid {process.pid}) died with exit code '
                                  f'{process.exitcode}')
        for index in self.lost - self._removed:  # left out: what it created goes once it exited
            if not self.processes[index].is_alive():
                segments.remove(self._prefixes[index])
                self._removed.add(index)
        return [report for report in reports if report[1] is not None]

    def _lose(self, index, message):
        remaining = len(self.processes) - len(self.lost) - 1
        if self.on_death == 'stop' or remaining == 0:
            raise processes.WorkerDiedError(message)
        self.lost.add(index)
        print(f'{message}; going on with {remaining} learner{"s" if remaining > 1 else ""} '
              "(on_learner_death = 'continue')", flush=True)

    def close(self):
        if self._closed:
            return
        self._closed = True
        self.stop_event.set()
        deadline = time.monotonic() + JOIN_SECONDS
        for process in self.processes:
            while process.is_alive() and time.monotonic() < deadline:
                self._drain()  # a learner blocked on a full queue must be able to finish
                process.join(timeout=0.05)
            processes.end_process(process, TERMINATE_SECONDS)
        for prefix in self._prefixes:
            segments.remove(prefix)
        self._drain()
        self.reports.close()
        self.reports.join_thread()

    def _drain(self):
        try:
            while True:
                self.reports.get_nowait()
        except (queue_lib.Empty, OSError, ValueError, EOFError):
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


class CentralState(tf.Module):
    """What a checkpoint holds of the store besides the model: one flat variable per optimizer
    slot (starting at its initial value) and the central update count."""

    def __init__(self, size, slot_initial_values, name='central_state'):
        super().__init__(name=name)
        self.slots = {slot: tf.Variable(tf.fill([size], float(value)), trainable=False,
                                        name=slot)
                      for slot, value in slot_initial_values.items()}
        self.updates = tf.Variable(0, dtype=tf.int64, trainable=False, name='updates')

    def trackables(self):
        return {f'central_{slot}': variable for slot, variable in self.slots.items()} | {
            'central_updates': self.updates}

    def load_into(self, store, variables):
        """Fills the store from the model's variables and this state."""
        store.parameters[:] = flat_values(variables)
        for slot, variable in self.slots.items():
            store.slots[slot][:] = variable.numpy()
        store.set_updates(int(self.updates.numpy()))

    def pull_from(self, store, variables):
        """Copies the store into the model's variables and this state (to save or evaluate)."""
        assign_flat(variables, store.pull())
        for slot, variable in self.slots.items():
            variable.assign(np.array(store.slots[slot]))
        scalars.assign(self.updates, store.updates)


def create_store(variables, state, num_chunks):
    """A new store holding the model's variables and state's slots and update count."""
    size = sum(int(np.prod(variable.shape)) for variable in variables)
    store = parameter_store.ParameterStore.create(size, tuple(state.slots),
                                                  num_chunks=num_chunks)
    try:
        state.load_into(store, variables)
    except BaseException:
        store.close()
        raise
    return store


class _Session:
    """The store and the learner processes of one training session."""

    def __init__(self, store, learners):
        self.store = store
        self.learners = learners

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        with processes.held_interrupts():  # a Ctrl-C meanwhile waits for the end of it
            try:
                self.learners.close()
            finally:
                self.store.close()


def train(config, run_dir, model, open_actor_learner, num_actor_learners, num_chunks, slot_initial_values,
          stat_names, on_learner_death='stop',
          shared_gpu_memory_mb=devices.SHARED_GPU_MEMORY_MB):
    """Runs num_actor_learners actor-learners of open_actor_learner on a central store of model's
    parameters (and the slots of slot_initial_values) until config.total_steps (RunConfig
    fields), logging the mean of each of stat_names over the actor-learners' reports, resuming
    from run_dir's checkpoint.
    on_learner_death, shared_gpu_memory_mb: LearnerProcesses'. This process needs no GPU: its
    entry point hides them (devices.Placement with learners)."""
    variables = model.trainable_variables
    size = sum(int(np.prod(variable.shape)) for variable in variables)
    state = CentralState(size, slot_initial_values)
    tracker = tracker_lib.tracker_for(run_dir, config, tuple(stat_names),
                                      {'model': model, **state.trackables()})

    def open_session():
        store = create_store(variables, state, num_chunks)
        try:
            # A resumed run continues with fresh environments, seeded apart from the first.
            learners = LearnerProcesses(open_actor_learner, config, store.handle, num_actor_learners,
                                        seed=config.seed + tracker.env_steps,
                                        on_death=on_learner_death,
                                        shared_gpu_memory_mb=shared_gpu_memory_mb)
        except BaseException:
            store.close()
            raise
        return _Session(store, learners)

    with segments.scope():  # whatever an ending leaves of the run's shared memory goes
        return runner.train(tracker, open_session,
                            lambda session: AsyncUnit(session, state, variables, stat_names))


class AsyncUnit(runner.Unit):
    """The main process of an asynchronous run: takes the learner processes' reports (steps,
    episodes, per-update statistics) and pulls the store's parameters into the model to save."""

    def __init__(self, session, state, variables, stat_names):
        self.session = session
        self.state = state
        self.variables = variables
        self.stat_names = tuple(stat_names)
        self._sums, self._reports = dict.fromkeys(self.stat_names, 0.0), 0

    def advance(self, env_steps):
        steps = updates = 0
        episodes = []
        for _, report_steps, report_episodes, stats in self.session.learners.take_reports():
            steps += report_steps
            updates += int(stats['updates'])
            episodes.extend(report_episodes)
            for name in self.stat_names:
                self._sums[name] += stats[name]
            self._reports += 1
        return steps, updates, episodes

    def updates(self):
        return self.session.store.updates

    def settle(self):
        self.state.pull_from(self.session.store, self.variables)

    finish = settle  # what runner.train saves: at the end, on Ctrl-C, when a learner died

    def row(self, seconds):
        """The mean of each statistic over the interval's reports."""
        means = {name: total / max(self._reports, 1) for name, total in self._sums.items()}
        self._sums, self._reports = dict.fromkeys(self.stat_names, 0.0), 0
        return means
