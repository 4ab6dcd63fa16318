"""Env pools: same results in every pool, same-step auto-reset, worker failure and clean-up."""
import dataclasses
import json
import multiprocessing
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import gin
import numpy as np
import pytest

from common.envs.atari import AtariConfig
from common.envs.gym import GymConfig, GymEnv
from common.envs.pools import (POOL_KINDS, AleVectorPool, ProcessPool, SerialPool, ThreadPool,
                               make_pool, validate_pool_config)
from common.system import processes

ROOT = pathlib.Path(__file__).resolve().parents[3]
SMALL_PONG = AtariConfig(game='pong', stack=2, max_episode_steps=100)


def _make(kind: str, config, num_envs: int = 4, seed: int = 0):
    return make_pool(config, num_envs, seed=seed, kind=kind, num_workers=2, num_threads=2)


def _copy(result) -> dict:
    return {name: np.array(value) for name, value in result._asdict().items()}


def _gone(pid: int) -> bool:
    return not os.path.exists(f'/proc/{pid}')


def _random_actions(num_steps: int, num_envs: int, num_actions: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, num_actions, (num_steps, num_envs))


@pytest.mark.slow
def test_serial_thread_process_pools_agree():
    actions = _random_actions(300, 4, SMALL_PONG.num_actions())
    trajectories = {}
    for kind in ('serial', 'thread', 'process'):
        with _make(kind, SMALL_PONG) as pool:
            trajectory = [pool.reset().copy()]
            trajectory += [_copy(pool.step(step_actions)) for step_actions in actions]
        trajectories[kind] = trajectory
    serial = trajectories['serial']
    assert sum(step['dones'].sum() for step in serial[1:]) == 3 * 4  # auto-resets compared too
    for kind in ('thread', 'process'):
        np.testing.assert_array_equal(trajectories[kind][0], serial[0])
        for expected, actual in zip(serial[1:], trajectories[kind][1:]):
            dones = expected['dones']
            for name in ('observations', 'rewards', 'terminals', 'dones'):
                np.testing.assert_array_equal(actual[name], expected[name], err_msg=kind)
            for name in ('episode_returns', 'episode_lengths'):
                np.testing.assert_array_equal(actual[name][dones], expected[name][dones])


@pytest.mark.slow
@pytest.mark.parametrize('kind', POOL_KINDS)
def test_same_step_auto_reset_and_unclipped_episode_returns(kind):
    cap = 40
    unclipped = AtariConfig(game='assault', max_episode_steps=cap, clip_rewards=False)
    clipped = dataclasses.replace(unclipped, clip_rewards=True)
    actions = _random_actions(2 * cap + 5, 4, unclipped.num_actions())
    with _make(kind, unclipped) as raw_pool, _make(kind, clipped) as clipped_pool:
        for observations in (raw_pool.reset(), clipped_pool.reset()):
            assert observations.shape == (4, 84, 84, 4) and observations.dtype == np.uint8
            assert not observations[..., :-1].any() and observations[..., -1].any(axis=(1, 2)).all()
        running_returns = np.zeros(4)
        largest_reward = 0.0
        for step, step_actions in enumerate(actions, start=1):
            raw = raw_pool.step(step_actions)
            result = clipped_pool.step(step_actions)
            np.testing.assert_array_equal(result.rewards, np.clip(raw.rewards, -1, 1))
            largest_reward = max(largest_reward, np.abs(raw.rewards).max())
            running_returns += raw.rewards
            episode_ended = step % cap == 0
            assert (result.dones == episode_ended).all() and (raw.dones == episode_ended).all()
            assert (result.terminals == episode_ended).all()
            if episode_ended:
                np.testing.assert_array_equal(result.episode_lengths, cap)
                np.testing.assert_allclose(raw.episode_returns, running_returns)
                np.testing.assert_allclose(result.episode_returns, running_returns)
                running_returns[:] = 0
                # Already the next episode's first observation: zeros but the newest frame.
                assert not result.observations[..., :-1].any()
                assert result.observations[..., -1].any(axis=(1, 2)).all()
            elif step % cap >= 3:
                assert result.observations[..., 0].any(axis=(1, 2)).all()
        assert largest_reward > 1


def test_killed_worker_raises_within_seconds():
    pool = ProcessPool(SMALL_PONG, 4, num_workers=2)
    pool.reset()
    pids, shm_name = pool.pids, pool.shm_name
    os.kill(pids[1], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=rf'worker 1 \(pid {pids[1]}\).*SIGKILL'):
        pool.step(np.zeros(4, np.int64))
    assert time.monotonic() - start < 10
    # The failed pool closed itself; closing again is harmless.
    pool.close()
    assert all(_gone(pid) for pid in pids)
    assert not os.path.exists(f'/dev/shm/{shm_name}')


@dataclasses.dataclass(frozen=True)
class ExplodingConfig(GymConfig):
    """CartPole whose env raises inside step() (only in the worker) to test error reporting."""
    explode_at_step: int = 2

    def make(self, seed: int) -> 'ExplodingEnv':
        return ExplodingEnv(self, seed)


class ExplodingEnv(GymEnv):
    def step(self, action: int):
        if self.episode_length + 1 >= self.config.explode_at_step:
            raise ArithmeticError('boom from the env')
        return super().step(action)


def test_worker_exception_is_reraised_with_its_traceback():
    pool = ProcessPool(ExplodingConfig(), 2, num_workers=2)
    pool.reset()
    pids = pool.pids
    pool.step(np.zeros(2, np.int64))
    with pytest.raises(RuntimeError, match=r'(?s)worker [01] failed.*ArithmeticError: boom'):
        pool.step(np.zeros(2, np.int64))
    assert all(_gone(pid) for pid in pids)


@pytest.mark.slow
def test_close_and_exception_in_with_leave_no_process_or_segment():
    pool = ProcessPool(SMALL_PONG, 2, num_workers=2)
    pool.reset()
    pids, shm_name = pool.pids, pool.shm_name
    assert os.path.exists(f'/dev/shm/{shm_name}')
    pool.close()
    pool.close()
    assert all(_gone(pid) for pid in pids)
    assert not os.path.exists(f'/dev/shm/{shm_name}')
    with pytest.raises(KeyError):
        with ProcessPool(SMALL_PONG, 2, num_workers=2) as pool:
            pids, shm_name = pool.pids, pool.shm_name
            observations = pool.reset()  # a view kept past close() must not break clean-up
            raise KeyError('inside the with block')
    assert observations.shape == (2, 84, 84, 2)
    assert all(_gone(pid) for pid in pids)
    assert not os.path.exists(f'/dev/shm/{shm_name}')
    assert not multiprocessing.active_children()


def _run_script(tmp_path, body: str, timeout: float = 60) -> subprocess.CompletedProcess:
    script = tmp_path / 'script.py'
    script.write_text(textwrap.dedent(body))
    return subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout,
                          env={**os.environ, 'PYTHONPATH': str(ROOT)})


def test_ctrl_c_in_parent_leaves_no_process_or_segment(tmp_path):
    completed = _run_script(tmp_path, """
        import json, signal
        from common.envs import AtariConfig, ProcessPool
        # As in a terminal, whatever the test runner's shell left (a background job starts
        # with SIGINT ignored, and Python then installs no KeyboardInterrupt handler).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        pool = ProcessPool(AtariConfig(stack=2), 2, num_workers=2)
        pool.reset()
        print(json.dumps({'pids': pool.pids, 'shm': pool.shm_name}), flush=True)
        signal.raise_signal(signal.SIGINT)
    """)
    assert 'KeyboardInterrupt' in completed.stderr
    started = json.loads(completed.stdout.splitlines()[0])
    assert all(_gone(pid) for pid in started['pids'])
    assert not os.path.exists(f"/dev/shm/{started['shm']}")


@pytest.mark.slow
def test_workers_do_not_import_the_parents_main_module(tmp_path):
    completed = _run_script(tmp_path, """
        import tensorflow  # a training entry point's top-level import
        import json
        from common.envs import AtariConfig, ProcessPool

        def loaded_tensorflow(pid):
            with open(f'/proc/{pid}/maps') as maps:
                return 'tensorflow' in maps.read()

        if __name__ == '__main__':
            with ProcessPool(AtariConfig(stack=2), 2, num_workers=2) as pool:
                pool.reset()
                print(json.dumps({'parent': loaded_tensorflow('self'),
                                  'workers': [loaded_tensorflow(pid) for pid in pool.pids]}))
    """, timeout=120)
    assert completed.returncode == 0, completed.stderr
    loaded = json.loads(completed.stdout.splitlines()[-1])
    assert loaded == {'parent': True, 'workers': [False, False]}


@pytest.mark.slow
def test_alternating_groups_match_a_serial_pool(step_groups_apart):
    actions = _random_actions(60, 4, SMALL_PONG.num_actions())
    with ProcessPool(SMALL_PONG, 4, num_workers=2, num_groups=2) as pool, \
            SerialPool(SMALL_PONG, 4) as serial:
        np.testing.assert_array_equal(pool.reset(), serial.reset())
        for step_actions in actions[:50]:
            first, second = step_groups_apart(pool, step_actions)
            expected = serial.step(step_actions)
            for name in ('observations', 'rewards', 'terminals', 'dones'):
                np.testing.assert_array_equal(first[name], getattr(expected, name)[:2])
                np.testing.assert_array_equal(second[name], getattr(expected, name)[2:])
        for step_actions in actions[50:]:
            np.testing.assert_array_equal(pool.step(step_actions).observations,
                                          serial.step(step_actions).observations)
        with pytest.raises(RuntimeError, match='step_wait'):
            pool.step_wait(0)
        pool.step_async(actions[0][:2], group=0)
        with pytest.raises(RuntimeError, match='already stepping'):
            pool.step_async(actions[0][:2], group=0)
        with pytest.raises(ValueError, match='group=2'):
            pool.step_async(actions[0][:2], group=2)
        pool.step_wait(0)
        with pytest.raises(ValueError, match='out of range'):  # in group 1: neither group steps
            pool.step([0, 1, 2, 99])
        assert pool.step([0, 1, 2, 3]).observations.shape == (4, *SMALL_PONG.observation_shape)


@pytest.fixture
def no_process_may_start(monkeypatch):
    def fail(process):
        raise AssertionError(f'{process.name} started before validation finished')
    monkeypatch.setattr(processes, 'start_process', fail)


@pytest.mark.parametrize('make, message', [
    (lambda: ProcessPool(SMALL_PONG, 0, num_workers=2), 'num_envs=0'),
    (lambda: ProcessPool(SMALL_PONG, 4, num_workers=0), 'num_workers=0'),
    (lambda: ProcessPool(SMALL_PONG, 5, num_workers=2), 'num_envs=5'),
    (lambda: ProcessPool(SMALL_PONG, 4, num_workers=2, num_groups=3), 'num_groups=3'),
    (lambda: ProcessPool(SMALL_PONG, 4, num_workers=2, seed=-1), 'seed=-1'),
    (lambda: ProcessPool(AtariConfig(game='pongg'), 4, num_workers=2), "'pongg'"),
    (lambda: ThreadPool(SMALL_PONG, 4, num_threads=3), 'num_threads=3'),
    (lambda: SerialPool('pong', 4), "env_config='pong'"),
    (lambda: AleVectorPool(AtariConfig(variant='stooke'), 4), "variant='stooke'"),
    (lambda: AleVectorPool(AtariConfig(decorrelation_steps=5), 4), 'decorrelation_steps=5'),
    (lambda: AleVectorPool(GymConfig(), 4), 'AtariConfig only'),
    (lambda: make_pool(SMALL_PONG, 4, kind='fork'), "kind='fork'"),
    (lambda: make_pool(SMALL_PONG, 4, kind='thread', num_groups=2), 'num_groups=2'),
    (lambda: make_pool(SMALL_PONG, 4, kind='serial', pin_cpus=True), 'pin_cpus=True'),
    (lambda: ProcessPool(SMALL_PONG, 4, num_workers=2, pin_cpus='yes'), "pin_cpus='yes'"),
    (lambda: ProcessPool(SMALL_PONG, 4, num_workers=2, pin_cpus=True, first_cpu=-1),
     'first_cpu=-1'),
    (lambda: make_pool(SMALL_PONG, 4, first_cpu=2), 'first_cpu=2 needs pin_cpus=True'),
])
def test_invalid_arguments_raise_before_any_process_starts(no_process_may_start, make, message):
    with pytest.raises(ValueError, match=message):
        make()
    assert not multiprocessing.active_children()


def test_validate_pool_config_follows_make_pool_bindings(no_process_may_start):
    validate_pool_config(SMALL_PONG, 4, 2)
    with pytest.raises(ValueError, match='num_envs=5'):
        validate_pool_config(SMALL_PONG, 5, 2)
    with gin.unlock_config():
        gin.bind_parameter('make_pool.kind', 'ale_vector')
    try:
        with pytest.raises(ValueError, match="variant='stooke'"):
            validate_pool_config(AtariConfig(variant='stooke'), 4, 2)
        validate_pool_config(AtariConfig(variant='stooke'), 4, 2, kind='process')
    finally:
        gin.clear_config()


def test_bad_actions_raise_value_error():
    with SerialPool(SMALL_PONG, 2) as pool:
        with pytest.raises(RuntimeError, match='reset'):
            pool.step(np.zeros(2, np.int64))
        pool.reset()
        with pytest.raises(ValueError, match='shape'):
            pool.step(np.zeros(3, np.int64))
        with pytest.raises(ValueError, match='out of range'):
            pool.step(np.array([0, 6]))


def test_gym_envs_in_a_process_pool():
    with ProcessPool(GymConfig(), 4, num_workers=2, seed=1) as pool, \
            SerialPool(GymConfig(), 4, seed=1) as serial:
        assert pool.observation_shape == (4,) and pool.observation_dtype == np.float32
        np.testing.assert_array_equal(pool.reset(), serial.reset())
        for step_actions in _random_actions(100, 4, 2):
            result, expected = pool.step(step_actions), serial.step(step_actions)
            np.testing.assert_array_equal(result.observations, expected.observations)
            np.testing.assert_array_equal(result.dones, expected.dones)


def test_an_orphaned_child_exits_even_while_blocked():
    """exit_when_orphaned ends a child stuck in a call that never returns once its parent is
    killed (SIGKILL: the parent runs no clean-up)."""
    child_code = ('import sys, threading; from common.system import processes; '
                  'processes.exit_when_orphaned(int(sys.argv[1]), 0.05); '
                  'threading.Event().wait()')  # blocked for good
    parent_code = textwrap.dedent(f'''
        import os, subprocess, sys, threading
        child = subprocess.Popen([sys.executable, '-c', {child_code!r}, str(os.getpid())])
        print(child.pid, flush=True)
        threading.Event().wait()
        ''')
    parent = subprocess.Popen([sys.executable, '-c', parent_code], stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    child_pid = int(parent.stdout.readline())
    time.sleep(1.0)
    assert os.path.exists(f'/proc/{child_pid}')  # the watchdog leaves a live parent's child be
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while os.path.exists(f'/proc/{child_pid}') and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f'/proc/{child_pid}')
    parent.stdout.close()


class _FakeProcess:
    """Stands in for a spawn Process; start() runs `on_start` (e.g. a signal arriving)."""

    def __init__(self, on_start=lambda: None):
        self.on_start = on_start
        self.handler_during_start = None

    def start(self):
        self.handler_during_start = signal.getsignal(signal.SIGINT)
        self.on_start()


def test_start_process_ignores_sigint_while_starting_and_restores_the_handler():
    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        process = _FakeProcess()
        processes.start_process(process)
        assert process.handler_during_start is signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_start_process_keeps_a_handler_that_a_signal_installed_while_starting():
    def stopping(signum, frame):
        pass

    def sigterm_arrives():  # what common.launch.app's first SIGTERM does: switch SIGINT, then raise
        signal.signal(signal.SIGINT, stopping)
        raise KeyboardInterrupt

    previous = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(KeyboardInterrupt):
            processes.start_process(_FakeProcess(sigterm_arrives))
        assert signal.getsignal(signal.SIGINT) is stopping
    finally:
        signal.signal(signal.SIGINT, previous)
