"""Pinning a process pool's workers to CPUs: one CPU each, a second learner's pool after the
first's, and a machine that refuses pinning running them unpinned with a warning."""
import dataclasses
import os

import pytest

from common.envs.atari import AtariConfig
from common.envs.pools import ProcessPool

SMALL_PONG = AtariConfig(game='pong', stack=2, max_episode_steps=100)


@pytest.mark.skipif(not hasattr(os, 'sched_setaffinity'), reason='no sched_setaffinity here')
def test_pinned_workers_each_run_on_one_cpu():
    allowed = sorted(os.sched_getaffinity(0))
    with ProcessPool(SMALL_PONG, 4, num_workers=2, pin_cpus=True) as pool:
        pool.reset()
        pinned = [os.sched_getaffinity(pid) for pid in pool.pids]
    assert pinned == [{allowed[0]}, {allowed[1 % len(allowed)]}]
    assert os.sched_getaffinity(0) == set(allowed)  # the parent stays unpinned


@pytest.mark.skipif(not hasattr(os, 'sched_setaffinity'), reason='no sched_setaffinity here')
def test_a_second_learners_pool_pins_its_workers_after_the_first_learners():
    """A3C and APPO open a pool per learner side by side (accel_tf/learners.py open_pool): the
    second's workers start at CPU num_workers, not on the first's CPUs again."""
    from accel_tf import config as accel_config
    from accel_tf import learners
    allowed = sorted(os.sched_getaffinity(0))
    config = dataclasses.replace(accel_config.AccelConfig(), env_config=SMALL_PONG, num_workers=1,
                                 envs_per_worker=2, pin_cpus=True)
    with learners.open_pool(config, 0, learner_index=0) as first, \
            learners.open_pool(config, 1, learner_index=1) as second:
        first.reset()
        second.reset()
        assert [os.sched_getaffinity(pid) for pid in first.pids + second.pids] == [
            {allowed[0]}, {allowed[1 % len(allowed)]}]


@pytest.mark.slow
def test_pinning_that_fails_warns_and_runs_unpinned(monkeypatch):
    def refuse(pid, cpus):
        raise PermissionError('not allowed')
    monkeypatch.setattr(os, 'sched_setaffinity', refuse)
    with pytest.warns(RuntimeWarning, match='could not pin worker pid'):
        with ProcessPool(SMALL_PONG, 4, num_workers=2, pin_cpus=True) as pool:
            assert pool.reset().shape[0] == 4
            assert pool.pin_cpus is False
