"""Batched environment pools behind one API: serial, threads, worker processes, ALE's C++ vector.

Every pool steps N envs with one call and automatically resets the envs whose episode ended,
in the same step, so observations[i] is always the observation to act on next.
"""
import threading
import traceback

import gin
import numpy as np

from common.envs.ale_vector import AleVectorPool
from common.envs.pool_base import (EnvPool, StepResult, _arrays, _check_common, _check_divides,
                                   _check_int, _EnvSlice, _layout, _result)
from common.envs.process_pool import ProcessPool

__all__ = ('POOL_KINDS', 'EnvPool', 'StepResult', 'SerialPool', 'ThreadPool', 'ProcessPool',
           'AleVectorPool', 'make_pool', 'validate_pool_config')

POOL_KINDS = ('serial', 'thread', 'process', 'ale_vector')
GROUPED_KINDS = ('process', 'ale_vector')  # the kinds with step_async / step_wait by group


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


_POOL_CLASSES = {'serial': SerialPool, 'thread': ThreadPool, 'process': ProcessPool,
                 'ale_vector': AleVectorPool}


def _pool_arguments(env_config, num_envs, seed, kind, num_workers, num_threads,
                    num_groups, pin_cpus=False, first_cpu=0) -> tuple:
    """Check make_pool's own arguments; (pool class, its constructor arguments)."""
    if kind not in POOL_KINDS:
        raise ValueError(f'kind={kind!r}; allowed: {POOL_KINDS}')
    _check_int('num_groups', num_groups, 1)
    if num_groups != 1 and kind not in GROUPED_KINDS:
        raise ValueError(f'num_groups={num_groups} needs kind in {GROUPED_KINDS}, not {kind!r}')
    if pin_cpus is not False and kind != 'process':  # ProcessPool.validate checks the type
        raise ValueError(f"pin_cpus={pin_cpus!r} needs kind='process', not {kind!r}")
    arguments = {
        'serial': (env_config, num_envs, seed),
        'thread': (env_config, num_envs, num_threads or num_workers, seed),
        'process': (env_config, num_envs, num_workers, seed, num_groups, pin_cpus, first_cpu),
        'ale_vector': (env_config, num_envs, seed, num_threads, num_groups),
    }[kind]
    return _POOL_CLASSES[kind], arguments


@gin.configurable(denylist=['first_cpu'])
def make_pool(env_config, num_envs: int, seed: int = 0, kind: str = 'process',
              num_workers: int = 2, num_threads: int = 0, num_groups: int = 1,
              pin_cpus: bool = False, first_cpu: int = 0) -> EnvPool:
    """A pool of `kind`: serial | thread (num_threads, or num_workers if 0) | process
    (num_workers, num_groups, pin_cpus: worker i on usable CPU first_cpu + i, so that pools
    opened side by side, one per learner, pin apart) | ale_vector (num_threads per group, 0 =
    ALE's choice; num_groups)."""
    if first_cpu and not pin_cpus:
        raise ValueError(f'first_cpu={first_cpu!r} needs pin_cpus=True')
    pool_class, arguments = _pool_arguments(env_config, num_envs, seed, kind, num_workers,
                                            num_threads, num_groups, pin_cpus, first_cpu)
    return pool_class(*arguments)


def configured_kind() -> str:
    """make_pool's kind as gin binds it now (its default, 'process', when unbound)."""
    return gin.get_bindings(make_pool).get('kind', 'process')


def validate_pool_config(env_config, num_envs: int, num_workers=None, **make_pool_arguments):
    """Raise ValueError for what make_pool would reject, starting nothing: arguments given
    here win, then make_pool's gin bindings, then its defaults."""
    settings = {'seed': 0, 'kind': 'process', 'num_workers': 2, 'num_threads': 0,
                'num_groups': 1, 'pin_cpus': False}
    settings.update({name: value for name, value in gin.get_bindings(make_pool).items()
                     if name in settings})
    if num_workers is not None:
        make_pool_arguments['num_workers'] = num_workers
    settings.update(make_pool_arguments)
    pool_class, arguments = _pool_arguments(env_config, num_envs, **settings)
    pool_class.validate(*arguments)
