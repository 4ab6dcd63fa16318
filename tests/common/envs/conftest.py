"""Fixtures of the env pool tests."""
import numpy as np
import pytest


def _copy(result):
    """A step's result as a dict of copied arrays (a pool may reuse its buffers)."""
    return {name: np.array(value) for name, value in result._asdict().items()}


def _step_groups_apart(pool, actions):
    """Steps pool's group 0 on the first half of actions and group 1 on the second, both at once,
    and waits for group 1 first: (group 0's result, group 1's), each copied."""
    half = len(actions) // 2
    pool.step_async(actions[:half], group=0)
    pool.step_async(actions[half:], group=1)
    second = _copy(pool.step_wait(1))
    return _copy(pool.step_wait(0)), second


@pytest.fixture
def step_groups_apart():
    """step(pool, actions): a pool of two groups stepped apart, to compare with the halves of
    a serial pool's step."""
    return _step_groups_apart
