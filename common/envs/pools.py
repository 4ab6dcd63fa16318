"""Batched environment pools behind one API: serial, threads, worker processes, ALE's C++ vector.

Every pool steps N envs with one call and automatically resets the envs whose episode ended,
in the same step, so observations[i] is always the observation to act on next.
"""
import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
import traceback
import types
import weakref
from multiprocessing import shared_memory
from typing import NamedTuple

import cv2
import gin
import numpy as np

from common.envs.atari import AtariConfig

POOL_KINDS = ('serial', 'thread', 'process', 'ale_vector')
# Worker commands and replies: one byte each, so a step costs one tiny pipe round trip.
_STEP, _RESET, _CLOSE = b's', b'r', b'c'
_OK, _ERROR = b'k', b'e'
_WAIT_SECONDS = 1.0      # how often a waiting parent looks at the workers again
_JOIN_SECONDS = 5.0      # how long close() waits for workers before terminating them
_ALIGNMENT = 64


class WorkerDiedError(RuntimeError):
    """A process or thread that steps environments (or trains) died or raised; a training run
    ends on it with a checkpoint of the learner and one line naming the worker."""


class StepResult(NamedTuple):
    """One batched step; arrays are pool-owned and valid until the next step or reset."""
    observations: np.ndarray     # (N, *obs_shape); after a done, the next episode's first obs
    rewards: np.ndarray          # (N,) float32, clipped if the env config clips
    terminals: np.ndarray        # (N,) bool: bootstrapping is cut here
    dones: np.ndarray            # (N,) bool: the episode ended and the env was reset
    episode_returns: np.ndarray  # (N,) float32: unclipped score of the ended episode, where dones
    episode_lengths: np.ndarray  # (N,) int32: agent steps of the ended episode, where dones


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_int(name: str, value, minimum: int) -> None:
    if not _is_int(value) or value < minimum:
        raise ValueError(f'{name}={value!r}; must be an int >= {minimum}')


def _check_divides(num_envs: int, name: str, count: int) -> None:
    if num_envs % count:
        raise ValueError(f'num_envs={num_envs} is not a multiple of {name}={count}')


def _check_common(env_config, num_envs, seed) -> None:
    """Validate what every pool takes, before anything is started."""
    if not callable(getattr(env_config, 'validate', None)):
        raise ValueError(f'env_config={env_config!r}; must be an AtariConfig or GymConfig')
    env_config.validate()
    _check_int('num_envs', num_envs, 1)
    _check_int('seed', seed, 0)


def _layout(num_envs: int, observation_shape: tuple, observation_dtype) -> tuple:
    """[(field, shape, dtype, byte offset)] of a pool's arrays in one buffer, and its size."""
    fields = [('observations', (num_envs, *observation_shape), np.dtype(observation_dtype)),
              ('actions', (num_envs,), np.dtype(np.int32)),
              ('rewards', (num_envs,), np.dtype(np.float32)),
              ('terminals', (num_envs,), np.dtype(np.bool_)),
              ('dones', (num_envs,), np.dtype(np.bool_)),
              ('episode_returns', (num_envs,), np.dtype(np.float32)),
              ('episode_lengths', (num_envs,), np.dtype(np.int32))]
    layout, offset = [], 0
    for name, shape, dtype in fields:
        layout.append((name, shape, dtype, offset))
        size = math.prod(shape) * dtype.itemsize
        offset += -(-size // _ALIGNMENT) * _ALIGNMENT
    return layout, max(offset, 1)


def _arrays(buffer, layout) -> dict:
    """Numpy views of the fields of `layout` over `buffer` (bytearray or shared memory)."""
    return {name: np.ndarray(shape, dtype, buffer=buffer, offset=offset)
            for name, shape, dtype, offset in layout}


def _result(arrays: dict, start: int = 0, stop=None) -> StepResult:
    return StepResult(*(arrays[name][start:stop] for name in StepResult._fields))


class _EnvSlice:
    """Envs [start, stop) of a pool, stepping into views of the pool's arrays."""

    def __init__(self, env_config, seed: int, start: int, stop: int, arrays: dict):
        self.envs = [env_config.make(seed + index) for index in range(start, stop)]
        self.observations = arrays['observations'][start:stop]
        self.actions = arrays['actions'][start:stop]
        self.rewards = arrays['rewards'][start:stop]
        self.terminals = arrays['terminals'][start:stop]
        self.dones = arrays['dones'][start:stop]
        self.episode_returns = arrays['episode_returns'][start:stop]
        self.episode_lengths = arrays['episode_lengths'][start:stop]

    def reset(self) -> None:
        for index, env in enumerate(self.envs):
            self.observations[index] = env.reset()
        self.rewards.fill(0)
        self.terminals.fill(False)
        self.dones.fill(False)

    def step(self) -> None:
        rewards, terminals, dones = [], [], []
        for index, (env, action) in enumerate(zip(self.envs, self.actions.tolist())):
            observation, reward, terminal, done = env.step(action)
            if done:
                self.episode_returns[index] = env.episode_return
                self.episode_lengths[index] = env.episode_length
                observation = env.reset()
            self.observations[index] = observation
            rewards.append(reward)
            terminals.append(terminal)
            dones.append(done)
        self.rewards[:] = rewards
        self.terminals[:] = terminals
        self.dones[:] = dones

    def close(self) -> None:
        for env in self.envs:
            env.close()
        self.envs = []


class EnvPool:
    """num_envs envs stepped together: reset() -> observations, step(actions) -> StepResult."""
    num_envs: int
    observation_shape: tuple
    observation_dtype: np.dtype
    num_actions: int

    def _describe(self, env_config, num_envs: int) -> None:
        self.num_envs = num_envs
        self.observation_shape = tuple(env_config.observation_shape)
        self.observation_dtype = np.dtype(env_config.observation_dtype)
        self.num_actions = env_config.num_actions()
        self._was_reset = False

    def _write_actions(self, actions, out: np.ndarray) -> None:
        """Check actions (shape, integer, in range) and copy them into `out`."""
        if not self._was_reset:
            raise RuntimeError('call reset() before step()')
        actions = np.asarray(actions)
        if actions.shape != out.shape or actions.dtype.kind not in 'iu':
            raise ValueError(f'actions of shape {actions.shape} and dtype {actions.dtype}; '
                             f'expected integers of shape {out.shape}')
        if actions.size and (actions.min() < 0 or actions.max() >= self.num_actions):
            raise ValueError(f'actions {actions.min()}..{actions.max()} out of range; '
                             f'allowed 0..{self.num_actions - 1}')
        out[:] = actions

    def reset(self) -> np.ndarray:
        raise NotImplementedError

    def step(self, actions) -> StepResult:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


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


def release_shared_memory(shm, unlink=True):
    """Closes (and by default unlinks) a segment, tolerating live numpy views and a prior unlink."""
    try:
        shm.close()
    except BufferError:  # a view still exists; the mapping goes with the last view
        pass
    if unlink:
        try:
            shm.unlink()
        except FileNotFoundError:
            pass


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


def exit_when_orphaned(parent_pid: int, poll_seconds: float) -> threading.Thread:
    """Starts a daemon thread that ends this process at once when parent_pid is gone.

    A child blocked where it cannot look (a queue's feeder thread flushing into a pipe nobody
    reads any more, joined at exit) would otherwise outlive a parent killed with SIGKILL. The
    parent's pid is passed in: os.getppid() at start-up may already be init's.
    """
    def watch():
        while os.getppid() == parent_pid:
            time.sleep(poll_seconds)
        os._exit(0)  # nothing left to report to, and a clean exit could block

    watcher = threading.Thread(target=watch, name='orphan-watchdog', daemon=True)
    watcher.start()
    return watcher


def start_process(process) -> None:
    """Start a spawn process that does not re-import the parent's __main__ module."""
    # spawn makes every child import the parent's __main__ (e.g. `python -m paac_tf.main`,
    # which imports TensorFlow: seconds and hundreds of MB per worker, and TF must never run
    # in a worker). A bare module there leaves the child only what it unpickles.
    main_module = sys.modules['__main__']
    in_main_thread = threading.current_thread() is threading.main_thread()
    # An ignored SIGINT is inherited, so Ctrl-C cannot hit a worker while it starts up.
    previous_handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main_thread else None
    sys.modules['__main__'] = types.ModuleType('__main__')
    try:
        process.start()
    finally:
        sys.modules['__main__'] = main_module
        # Unless a signal handler replaced ours meanwhile (a SIGTERM that began stopping the run
        # switches SIGINT to "already stopping"), which must stay.
        if in_main_thread and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.signal(signal.SIGINT, previous_handler)


_start_process = start_process  # the name before it was public


def end_process(process, terminate_seconds: float = 1.0) -> None:
    """Ends a process that did not stop when asked: SIGTERM, then SIGKILL after a grace time."""
    if process.is_alive():
        process.terminate()
        process.join(timeout=terminate_seconds)
    if process.is_alive():
        process.kill()
        process.join()


def _shutdown(processes: list, connections: list, shm: _SharedMemory) -> None:
    """Stop workers (politely, then by force) and remove the shared memory; runs once."""
    for connection in connections:
        try:
            connection.send_bytes(_CLOSE)
        except OSError:
            pass
    deadline = time.monotonic() + _JOIN_SECONDS
    for process in processes:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
    for process in processes:
        end_process(process)
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
            _start_process(process)
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


class AleVectorPool(EnvPool):
    """ale_py's AtariVectorEnv (C++ threads) with the same StepResult semantics as the others."""

    @staticmethod
    def validate(atari_config: AtariConfig, num_envs: int, seed: int = 0,
                 num_threads: int = 0) -> None:
        """Raise ValueError for arguments __init__ would reject, starting nothing."""
        if not isinstance(atari_config, AtariConfig):
            raise ValueError(f'atari_config={atari_config!r}; AleVectorPool runs AtariConfig only')
        _check_common(atari_config, num_envs, seed)
        _check_int('num_threads', num_threads, 0)
        if atari_config.variant != 'nature':
            raise ValueError(f'AtariConfig.variant={atari_config.variant!r} is not supported '
                             "by AleVectorPool (no crop/downsample there); allowed: 'nature'")
        if atari_config.resolved_decorrelation_steps:
            raise ValueError(f'AtariConfig.decorrelation_steps='
                             f'{atari_config.decorrelation_steps!r} is not supported by '
                             'AleVectorPool; allowed: None or 0')

    def __init__(self, atari_config: AtariConfig, num_envs: int, seed: int = 0,
                 num_threads: int = 0):
        self.validate(atari_config, num_envs, seed, num_threads)
        self._describe(atari_config, num_envs)
        self._config = atari_config
        from ale_py.vector_env import AtariVectorEnv  # pylint: disable=import-outside-toplevel
        height, width = atari_config.screen_size
        max_frames = atari_config.max_episode_steps * atari_config.frame_skip
        self._env = AtariVectorEnv(
            atari_config.game, num_envs, num_threads=num_threads,
            autoreset_mode='SameStep',
            img_height=height, img_width=width, grayscale=True,
            stack_num=atari_config.stack, frameskip=atari_config.frame_skip,
            maxpool=atari_config.max_pool, noop_max=atari_config.noop_max,
            # Its episodic_life resets the game on a life loss; life_loss_info only reports it
            # as a termination, which is what episodic_life means here.
            episodic_life=False, life_loss_info=atari_config.episodic_life,
            # Clipped here, so that episode returns can stay the unclipped score.
            reward_clipping=False,
            use_fire_reset=atari_config.presses_fire,
            max_num_frames_per_episode=min(max_frames or 2**31 - 1, 2**31 - 1),
            repeat_action_probability=float(atari_config.repeat_action_probability),
            full_action_space=atari_config.full_action_space)
        self._seed = seed
        self._actions = np.zeros(num_envs, np.int32)
        self._observations = np.zeros((num_envs, *self.observation_shape), np.uint8)
        self._rewards = np.zeros(num_envs, np.float32)
        self._episode_returns = np.zeros(num_envs, np.float32)
        self._episode_lengths = np.zeros(num_envs, np.int32)
        self._running_returns = np.zeros(num_envs, np.float64)
        self._running_lengths = np.zeros(num_envs, np.int32)
        self._lives = np.zeros(num_envs, np.int32)

    def _to_channel_last(self, observations: np.ndarray) -> None:
        """(N, stack, H, W) -> the pool's (N, H, W, stack) buffer."""
        # cv2.merge per env is ~13x faster than numpy's strided transposing copy.
        if self.observation_shape[-1] == 1:
            self._observations.reshape(observations.shape)[:] = observations
            return
        for source, target in zip(observations, self._observations):
            cv2.merge(list(source), target)

    def reset(self) -> np.ndarray:
        if self._env is None:
            raise RuntimeError('the pool is closed')
        # Seeds env i with seed + i on the first reset only, like the other pools' envs.
        observations, info = self._env.reset(seed=self._seed)
        self._seed = None
        self._to_channel_last(observations)
        self._lives[:] = info['lives']
        self._running_returns.fill(0)
        self._running_lengths.fill(0)
        self._was_reset = True
        return self._observations

    def step(self, actions) -> StepResult:
        if self._env is None:
            raise RuntimeError('the pool is closed')
        self._write_actions(actions, self._actions)
        observations, raw_rewards, terminations, truncations, info = self._env.step(
            self._actions)
        self._to_channel_last(observations)
        lives = info['lives']
        terminals = terminations | truncations
        if self._config.episodic_life:
            # A life loss terminates without a reset (lives go down); at game over the env is
            # already reset, so lives are back up (or stay 0 in games without lives).
            dones = truncations | (terminations & (lives >= self._lives))
        else:
            dones = terminals
        self._lives[:] = lives
        self._running_returns += raw_rewards
        self._running_lengths += 1
        self._episode_returns[dones] = self._running_returns[dones]
        self._episode_lengths[dones] = self._running_lengths[dones]
        self._running_returns[dones] = 0
        self._running_lengths[dones] = 0
        if self._config.clip_rewards:
            np.clip(raw_rewards, -1, 1, out=self._rewards, casting='unsafe')
        else:
            self._rewards[:] = raw_rewards
        return StepResult(self._observations, self._rewards, terminals, dones,
                          self._episode_returns, self._episode_lengths)

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            # Dropping the last reference joins ALE's C++ threads.
            self._env = None


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
