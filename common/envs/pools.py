"""Batched environment pools behind one API: serial, threads, worker processes, ALE's C++ vector.

Every pool steps N envs with one call and automatically resets the envs whose episode ended,
in the same step, so observations[i] is always the observation to act on next.
"""
import multiprocessing
import multiprocessing.connection
import signal
import threading
import time
import traceback
import weakref
from multiprocessing import shared_memory

import gin
import numpy as np

from common import processes
from common.envs.ale_vector import AleVectorPool
from common.envs.pool_base import (EnvPool, StepResult, _arrays, _check_common, _check_divides,
                                   _check_int, _EnvSlice, _is_int, _layout, _result)
from common.processes import WorkerDiedError

POOL_KINDS = ('serial', 'thread', 'process', 'ale_vector')
# Worker commands and replies: one byte each, so a step costs one tiny pipe round trip.
_STEP, _RESET, _CLOSE = b's', b'r', b'c'
_OK, _ERROR = b'k', b'e'
_WAIT_SECONDS = 1.0      # how often a waiting parent looks at the workers again
_JOIN_SECONDS = 5.0      # how long close() waits for workers before terminating them


class SerialPool(EnvPool):
    """All envs stepped one after the other in the calling thread (reference and baseline)."""

    @staticmethod
    def validate(env_config, num_envs: int, seed: int = 0) -> None:
        """Raise ValueError for arguments __init__ would reject, starting nothing."""
        _check_common(env_config, num_envs, seed)

    def __init__(self, env_config, num_envs: int, seed: int = 0):
        self.validate(env_config, num_envs, seed)
        self._describe(env_config, num_envs)
        layout, size = _layout(num_envs, self.observation_shape, self.observation_dtype)
        self._arrays = _arrays(bytearray(size), layout)
        self._result = _result(self._arrays)
        self._slice = _EnvSlice(env_config, seed, 0, num_envs, self._arrays)

    def reset(self) -> np.ndarray:
        self._slice.reset()
        self._was_reset = True
        return self._result.observations

    def step(self, actions) -> StepResult:
        self._write_actions(actions, self._arrays['actions'])
        self._slice.step()
        return self._result

    def close(self) -> None:
        self._slice.close()


class ThreadPool(EnvPool):
    """Persistent threads, each stepping a contiguous slice of the envs."""

    @staticmethod
    def validate(env_config, num_envs: int, num_threads: int, seed: int = 0) -> None:
        """Raise ValueError for arguments __init__ would reject, starting nothing."""
        _check_common(env_config, num_envs, seed)
        _check_int('num_threads', num_threads, 1)
        _check_divides(num_envs, 'num_threads', num_threads)

    def __init__(self, env_config, num_envs: int, num_threads: int, seed: int = 0):
        self.validate(env_config, num_envs, num_threads, seed)
        self._describe(env_config, num_envs)
        layout, size = _layout(num_envs, self.observation_shape, self.observation_dtype)
        self._arrays = _arrays(bytearray(size), layout)
        self._result = _result(self._arrays)
        envs_per_thread = num_envs // num_threads
        self._slices = [_EnvSlice(env_config, seed, start, start + envs_per_thread, self._arrays)
                        for start in range(0, num_envs, envs_per_thread)]
        self._command = None
        self._errors = [None] * num_threads
        self._start = threading.Barrier(num_threads + 1)
        self._finish = threading.Barrier(num_threads + 1)
        self._threads = [threading.Thread(target=self._serve, args=(index,), daemon=True,
                                          name=f'ThreadPool-{index}')
                         for index in range(num_threads)]
        for thread in self._threads:
            thread.start()
        self._closed = False

    def _serve(self, index: int) -> None:
        """Thread loop: wait for a command (an _EnvSlice method), run it on our slice."""
        while True:
            try:
                self._start.wait()
            except threading.BrokenBarrierError:
                return
            command = self._command
            if command is None:
                return
            try:
                command(self._slices[index])
            except Exception:  # pylint: disable=broad-except
                self._errors[index] = traceback.format_exc()
            try:
                self._finish.wait()
            except threading.BrokenBarrierError:
                return

    def _run(self, command) -> None:
        if self._closed:
            raise RuntimeError('the pool is closed')
        self._command = command
        self._start.wait()
        self._finish.wait()
        for index, error in enumerate(self._errors):
            if error is not None:
                self.close()
                raise RuntimeError(f'ThreadPool thread {index} failed:\n{error}')

    def reset(self) -> np.ndarray:
        self._run(_EnvSlice.reset)
        self._was_reset = True
        return self._result.observations

    def step(self, actions) -> StepResult:
        self._write_actions(actions, self._arrays['actions'])
        self._run(_EnvSlice.step)
        return self._result

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._command = None
        self._start.abort()
        self._finish.abort()
        for thread in self._threads:
            thread.join()
        for env_slice in self._slices:
            env_slice.close()


class _SharedMemory(shared_memory.SharedMemory):
    """SharedMemory whose __del__ stays quiet while numpy views of it (a StepResult kept past
    close()) still live; the mapping is freed with the last view."""

    def __del__(self):
        try:
            self.close()
        except (OSError, BufferError):
            pass


def _worker(connection, shm_name: str, layout, env_config, seed: int, start: int, stop: int):
    """Worker process: step envs [start, stop) into shared memory on each one-byte command."""
    # The parent handles Ctrl-C and closes the pool; a worker dying first would only add noise.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    shm = env_slice = None
    try:
        shm = _SharedMemory(name=shm_name)
        env_slice = _EnvSlice(env_config, seed, start, stop, _arrays(shm.buf, layout))
        connection.send_bytes(_OK)
        while True:
            try:
                command = connection.recv_bytes()
            except EOFError:  # the parent is gone
                return
            if command == _STEP:
                env_slice.step()
            elif command == _RESET:
                env_slice.reset()
            else:
                return
            connection.send_bytes(_OK)
    except Exception:  # pylint: disable=broad-except
        try:
            connection.send_bytes(_ERROR + traceback.format_exc().encode())
        except OSError:
            pass
    finally:
        if env_slice is not None:
            env_slice.close()
        env_slice = None
        if shm is not None:
            try:
                shm.close()
            except BufferError:  # a view still referenced from a traceback; exiting anyway
                pass


def _shutdown(workers: list, connections: list, shm: _SharedMemory) -> None:
    """Stop workers (politely, then by force) and remove the shared memory; runs once."""
    for connection in connections:
        try:
            connection.send_bytes(_CLOSE)
        except OSError:
            pass
    deadline = time.monotonic() + _JOIN_SECONDS
    for process in workers:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
    for process in workers:
        processes.end_process(process)
    for connection in connections:
        connection.close()
    try:
        shm.unlink()
    except FileNotFoundError:
        pass
    try:
        shm.close()
    except BufferError:  # views handed out still live; unmapped when they go
        pass


class ProcessPool(EnvPool):
    """PAAC's pool: spawned workers step num_envs / num_workers envs each into shared memory."""

    @staticmethod
    def validate(env_config, num_envs: int, num_workers: int, seed: int = 0,
                 num_groups: int = 1) -> None:
        """Raise ValueError for arguments __init__ would reject, starting nothing."""
        _check_common(env_config, num_envs, seed)
        _check_int('num_workers', num_workers, 1)
        _check_divides(num_envs, 'num_workers', num_workers)
        _check_int('num_groups', num_groups, 1)
        if num_workers % num_groups:
            raise ValueError(f'num_workers={num_workers} is not a multiple of '
                             f'num_groups={num_groups}')

    def __init__(self, env_config, num_envs: int, num_workers: int, seed: int = 0,
                 num_groups: int = 1):
        self.validate(env_config, num_envs, num_workers, seed, num_groups)
        self._describe(env_config, num_envs)
        self.num_workers = num_workers
        self.num_groups = num_groups
        layout, size = _layout(num_envs, self.observation_shape, self.observation_dtype)
        self._processes, self._connections = [], []
        self._shm = _SharedMemory(create=True, size=size)
        # Registered at once: an exception or Ctrl-C from here on leaves no process or segment.
        self._finalizer = weakref.finalize(self, _shutdown, self._processes, self._connections,
                                           self._shm)
        self._arrays = _arrays(self._shm.buf, layout)
        self._result = _result(self._arrays)
        self._envs_per_group = num_envs // num_groups
        self._workers_per_group = num_workers // num_groups
        self._group_results = [
            _result(self._arrays, group * self._envs_per_group,
                    (group + 1) * self._envs_per_group) for group in range(num_groups)]
        self._stepping = [False] * num_groups
        try:
            self._start_workers(env_config, seed, layout)
        except BaseException:
            self.close()
            raise

    def _start_workers(self, env_config, seed: int, layout) -> None:
        context = multiprocessing.get_context('spawn')
        envs_per_worker = self.num_envs // self.num_workers
        for index in range(self.num_workers):
            parent_end, child_end = context.Pipe()
            start = index * envs_per_worker
            process = context.Process(
                target=_worker, name=f'ProcessPool-{index}', daemon=True,
                args=(child_end, self._shm.name, layout, env_config, seed, start,
                      start + envs_per_worker))
            self._connections.append(parent_end)
            self._processes.append(process)
            processes.start_process(process)
            # Only the worker may hold its end: then its death reads as EOF here.
            child_end.close()
        self._wait(range(self.num_workers))

    @property
    def pids(self) -> list:
        """Process ids of the workers (for monitoring and tests)."""
        return [process.pid for process in self._processes]

    @property
    def shm_name(self) -> str:
        """Name of the shared-memory segment (/dev/shm/<name> on Linux)."""
        return self._shm.name

    def _workers_of(self, group: int) -> range:
        return range(group * self._workers_per_group, (group + 1) * self._workers_per_group)

    def _send(self, workers, command: bytes) -> None:
        for index in workers:
            try:
                self._connections[index].send_bytes(command)
            except OSError:
                self._raise_dead(index)

    def _wait(self, workers) -> None:
        """Wait for each worker's reply; raise RuntimeError at once if one died or failed."""
        pending = {self._connections[index]: index for index in workers}
        sentinels = {self._processes[index].sentinel: index for index in workers}
        while pending:
            ready = multiprocessing.connection.wait(
                list(pending) + [sentinel for sentinel, index in sentinels.items()
                                 if self._connections[index] in pending],
                timeout=_WAIT_SECONDS)
            for item in ready:
                if item in sentinels or item not in pending:
                    continue
                index = pending.pop(item)
                try:
                    reply = item.recv_bytes()
                except (EOFError, OSError):
                    self._raise_dead(index)
                if reply != _OK:
                    self.close()
                    raise WorkerDiedError(f'ProcessPool worker {index} failed:\n'
                                          f'{reply[1:].decode(errors="replace")}')
            for item in ready:
                index = sentinels.get(item)
                if index is not None and self._connections[index] in pending:
                    if not self._connections[index].poll():
                        self._raise_dead(index)

    def _raise_dead(self, index: int) -> None:
        process = self._processes[index]
        process.join(timeout=1.0)
        pid, exit_code = process.pid, process.exitcode
        self.close()
        if exit_code is not None and exit_code < 0:
            how = f'was killed by signal {signal.Signals(-exit_code).name}'
        else:
            how = f'exited with code {exit_code}'
        raise WorkerDiedError(f'ProcessPool worker {index} (pid {pid}) {how}')

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise RuntimeError('the pool is closed')

    def _check_group(self, group) -> None:
        if not _is_int(group) or not 0 <= group < self.num_groups:
            raise ValueError(f'group={group!r}; allowed 0..{self.num_groups - 1}')

    def reset(self) -> np.ndarray:
        self._check_open()
        if any(self._stepping):
            raise RuntimeError('reset() while a step_async() is waiting for step_wait()')
        self._send(range(self.num_workers), _RESET)
        self._wait(range(self.num_workers))
        self._was_reset = True
        return self._result.observations

    def step_async(self, actions, group: int = 0) -> None:
        """Start stepping group `group`'s envs with `actions` (num_envs / num_groups of them)."""
        self._check_open()
        self._check_group(group)
        if self._stepping[group]:
            raise RuntimeError(f'group {group} is already stepping; call step_wait({group})')
        start = group * self._envs_per_group
        self._write_actions(actions, self._arrays['actions'][start:start + self._envs_per_group])
        self._send(self._workers_of(group), _STEP)
        self._stepping[group] = True

    def step_wait(self, group: int = 0) -> StepResult:
        """Wait for group `group`'s step; returns the StepResult of its slice of envs."""
        self._check_open()
        self._check_group(group)
        if not self._stepping[group]:
            raise RuntimeError(f'step_wait({group}) without step_async(actions, {group})')
        self._wait(self._workers_of(group))
        self._stepping[group] = False
        return self._group_results[group]

    def step(self, actions) -> StepResult:
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs,):
            raise ValueError(f'actions of shape {actions.shape}; expected ({self.num_envs},)')
        for group in range(self.num_groups):
            start = group * self._envs_per_group
            self.step_async(actions[start:start + self._envs_per_group], group)
        for group in range(self.num_groups):
            self.step_wait(group)
        return self._result

    def close(self) -> None:
        """Stop the workers and free the shared memory; safe to call more than once."""
        self._arrays = self._result = self._group_results = None
        self._finalizer()


_POOL_CLASSES = {'serial': SerialPool, 'thread': ThreadPool, 'process': ProcessPool,
                 'ale_vector': AleVectorPool}


def _pool_arguments(env_config, num_envs, seed, kind, num_workers, num_threads,
                    num_groups) -> tuple:
    """Check make_pool's own arguments; (pool class, its constructor arguments)."""
    if kind not in POOL_KINDS:
        raise ValueError(f'kind={kind!r}; allowed: {POOL_KINDS}')
    _check_int('num_groups', num_groups, 1)
    if num_groups != 1 and kind != 'process':
        raise ValueError(f"num_groups={num_groups} needs kind='process', not {kind!r}")
    arguments = {
        'serial': (env_config, num_envs, seed),
        'thread': (env_config, num_envs, num_threads or num_workers, seed),
        'process': (env_config, num_envs, num_workers, seed, num_groups),
        'ale_vector': (env_config, num_envs, seed, num_threads),
    }[kind]
    return _POOL_CLASSES[kind], arguments


@gin.configurable
def make_pool(env_config, num_envs: int, seed: int = 0, kind: str = 'process',
              num_workers: int = 2, num_threads: int = 0, num_groups: int = 1) -> EnvPool:
    """A pool of `kind`: serial | thread (num_threads, or num_workers if 0) | process
    (num_workers, num_groups) | ale_vector (num_threads, 0 = ALE's choice)."""
    pool_class, arguments = _pool_arguments(env_config, num_envs, seed, kind, num_workers,
                                            num_threads, num_groups)
    return pool_class(*arguments)


def validate_pool_config(env_config, num_envs: int, num_workers=None, **make_pool_arguments):
    """Raise ValueError for what make_pool would reject, starting nothing: arguments given
    here win, then make_pool's gin bindings, then its defaults."""
    settings = {'seed': 0, 'kind': 'process', 'num_workers': 2, 'num_threads': 0,
                'num_groups': 1}
    settings.update({name: value for name, value in gin.get_bindings(make_pool).items()
                     if name in settings})
    if num_workers is not None:
        make_pool_arguments['num_workers'] = num_workers
    settings.update(make_pool_arguments)
    pool_class, arguments = _pool_arguments(env_config, num_envs, **settings)
    pool_class.validate(*arguments)
