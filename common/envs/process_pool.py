"""ProcessPool: PAAC's pool. Spawned worker processes (no TensorFlow) step num_envs / num_workers
environments each into one shared-memory buffer, on one-byte commands over pipes; optionally in
groups that step on their own (the alternating sampler)."""
import multiprocessing
import multiprocessing.connection
import signal
import time
import traceback
import warnings
import weakref
from multiprocessing import shared_memory

import numpy as np

from common.envs.pool_base import (GroupedPool, StepResult, _arrays, _check_common, _check_divides,
                                   _check_int, _EnvSlice, _layout, _result)
from common.system import processes
from common.system import segments
from common.system.processes import WorkerDiedError

# Worker commands and replies: one byte each, so a step costs one tiny pipe round trip.
_STEP, _RESET, _CLOSE = b's', b'r', b'c'
_OK, _ERROR = b'k', b'e'
_WAIT_SECONDS = 1.0      # how often a waiting parent looks at the workers again
_JOIN_SECONDS = 5.0      # how long close() waits for workers before terminating them


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


class ProcessPool(GroupedPool):
    """PAAC's pool: spawned workers step num_envs / num_workers envs each into shared memory."""

    @staticmethod
    def validate(env_config, num_envs: int, num_workers: int, seed: int = 0,
                 num_groups: int = 1, pin_cpus: bool = False, first_cpu: int = 0) -> None:
        """Raise ValueError for arguments __init__ would reject, starting nothing."""
        if not isinstance(pin_cpus, bool):
            raise ValueError(f'pin_cpus={pin_cpus!r}; must be True or False')
        _check_int('first_cpu', first_cpu, 0)
        _check_common(env_config, num_envs, seed)
        _check_int('num_workers', num_workers, 1)
        _check_divides(num_envs, 'num_workers', num_workers)
        _check_int('num_groups', num_groups, 1)
        if num_workers % num_groups:
            raise ValueError(f'num_workers={num_workers} is not a multiple of '
                             f'num_groups={num_groups}')

    def __init__(self, env_config, num_envs: int, num_workers: int, seed: int = 0,
                 num_groups: int = 1, pin_cpus: bool = False, first_cpu: int = 0):
        """pin_cpus: pin worker i to the (first_cpu + i)-th usable CPU (modulo their count); a
        machine where that is impossible gets a warning and unpinned workers."""
        self.validate(env_config, num_envs, num_workers, seed, num_groups, pin_cpus, first_cpu)
        self.pin_cpus = bool(pin_cpus)
        self.first_cpu = first_cpu
        self._describe(env_config, num_envs)
        self.num_workers = num_workers
        self.num_groups = num_groups
        layout, size = _layout(num_envs, self.observation_shape, self.observation_dtype)
        self._processes, self._connections = [], []
        self._shm = segments.create(size, _SharedMemory)  # a parent can remove it by name
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
            if self.pin_cpus:
                warning = processes.pin_to_cpu(process.pid, self.first_cpu + index)
                if warning:
                    warnings.warn(warning, RuntimeWarning, stacklevel=3)
                    self.pin_cpus = False
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
        if not self._finalizer.alive:  # closed by another thread (whose worker died) meanwhile
            raise RuntimeError('the pool is closed')
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

    def reset(self) -> np.ndarray:
        self._check_open()
        if any(self._stepping):
            raise RuntimeError('reset() while a step_async() is waiting for step_wait()')
        self._send(range(self.num_workers), _RESET)
        self._wait(range(self.num_workers))
        self._was_reset = True
        return self._result.observations

    def _group_actions(self, group: int) -> np.ndarray:
        start = group * self._envs_per_group
        return self._arrays['actions'][start:start + self._envs_per_group]

    def _send_group(self, group: int) -> None:
        self._send(self._workers_of(group), _STEP)
        self._stepping[group] = True

    def _wait_group(self, group: int) -> StepResult:
        self._wait(self._workers_of(group))
        results = self._group_results
        if results is None:  # another thread closed the pool meanwhile (a worker of it died)
            raise RuntimeError('the pool is closed')
        return results[group]

    def close(self) -> None:
        """Stop the workers and free the shared memory; safe to call more than once."""
        self._arrays = self._result = self._group_results = None
        self._finalizer()
