"""AleVectorPool: ale_py's C++ vector env gives AtariEnv's frames, for every resize."""
import numpy as np
import pytest

from common.envs.atari import RESIZES, AtariConfig
from common.envs.pools import AleVectorPool, SerialPool


def _random_actions(num_steps, num_envs, num_actions):
    return np.random.default_rng(0).integers(0, num_actions, (num_steps, num_envs))


@pytest.mark.slow
@pytest.mark.parametrize('resize', RESIZES)
def test_frames_match_atari_env_without_random_starts(resize):
    # No no-ops and no sticky actions: both pools play the same deterministic game, so every
    # observation (resized here or in C++, stacked, zero-padded after an episode's end) agrees.
    config = AtariConfig(game='pong', resize=resize, noop_max=0, fire_reset=False, stack=3,
                         max_episode_steps=60)
    vector, serial = AleVectorPool(config, 2, num_threads=2), SerialPool(config, 2)
    try:
        np.testing.assert_array_equal(vector.reset(), serial.reset())
        ended = 0
        for step_actions in _random_actions(130, 2, config.num_actions()):
            expected, actual = serial.step(step_actions), vector.step(step_actions)
            for name in ('observations', 'rewards', 'terminals', 'dones'):
                np.testing.assert_array_equal(getattr(actual, name), getattr(expected, name),
                                              err_msg=f'{resize}: {name}')
            ended += int(expected.dones.sum())
        assert ended == 4  # two episode ends each, at the 60-step cap, crossed above
    finally:
        vector.close()
        serial.close()


@pytest.mark.slow
def test_frames_resized_here_are_the_requested_shape():
    config = AtariConfig(game='breakout', resize='linear', screen_size=(64, 48), stack=2,
                         episodic_life=True)
    pool = AleVectorPool(config, 3, num_threads=1)
    try:
        observations = pool.reset()
        assert observations.shape == (3, 64, 48, 2) and not observations[..., 0].any()
        for step_actions in _random_actions(40, 3, config.num_actions()):
            result = pool.step(step_actions)
        assert result.observations.shape == (3, 64, 48, 2)
        assert result.observations[..., 0].any(axis=(1, 2)).all()
    finally:
        pool.close()


@pytest.mark.slow
@pytest.mark.parametrize('resize', ['area', 'linear'])
def test_groups_step_apart_and_match_a_serial_pool(resize, step_groups_apart):
    # 'area' stacks in C++, 'linear' here: both keep each group's envs and stacks apart.
    config = AtariConfig(game='pong', resize=resize, noop_max=0, fire_reset=False, stack=2,
                         max_episode_steps=40)
    actions = _random_actions(90, 4, config.num_actions())
    vector = AleVectorPool(config, 4, seed=3, num_threads=1, num_groups=2)
    serial = SerialPool(config, 4, seed=3)
    try:
        assert vector.num_groups == 2
        np.testing.assert_array_equal(vector.reset(), serial.reset())
        ended = 0
        for step_actions in actions[:80]:
            first, second = step_groups_apart(vector, step_actions)
            expected = serial.step(step_actions)
            for name in ('observations', 'rewards', 'terminals', 'dones', 'episode_lengths'):
                wanted = getattr(expected, name)
                if name == 'episode_lengths':  # defined where an episode ended
                    first[name], second[name] = first[name] * first['dones'], \
                        second[name] * second['dones']
                    wanted = wanted * expected.dones
                np.testing.assert_array_equal(first[name], wanted[:2], err_msg=name)
                np.testing.assert_array_equal(second[name], wanted[2:], err_msg=name)
            ended += int(expected.dones.sum())
        assert ended == 8  # each env's episode capped at 40 steps, twice
        for step_actions in actions[80:]:
            np.testing.assert_array_equal(vector.step(step_actions).observations,
                                          serial.step(step_actions).observations)
    finally:
        vector.close()
        serial.close()


@pytest.mark.slow
def test_group_misuse_raises():
    pool = AleVectorPool(AtariConfig(game='pong'), 4, num_threads=1, num_groups=2)
    try:
        pool.reset()
        with pytest.raises(RuntimeError, match='step_wait'):
            pool.step_wait(0)
        pool.step_async([0, 1], group=0)
        with pytest.raises(RuntimeError, match='already stepping'):
            pool.step_async([0, 1], group=0)
        with pytest.raises(RuntimeError, match='reset'):
            pool.reset()
        with pytest.raises(ValueError, match='group=2'):
            pool.step_async([0, 1], group=2)
        with pytest.raises(ValueError, match='shape'):
            pool.step_async([0, 1, 2], group=1)
        assert pool.step_wait(0).observations.shape == (2, 84, 84, 4)
        # A bad action in the second group steps neither: the pool goes on.
        with pytest.raises(ValueError, match='out of range'):
            pool.step([0, 1, 2, 99])
        assert pool.step([0, 1, 2, 3]).observations.shape == (4, 84, 84, 4)
        pool.step_async([0, 1], group=1)
    finally:
        pool.close()  # also with a group still stepping
    pool = AleVectorPool(AtariConfig(game='pong'), 2, seed=np.int64(5), num_threads=1,
                         num_groups=2)
    pool.reset()  # a numpy integer seed too
    pool.step_async([0], group=1)
    pool.close()
    with pytest.raises(RuntimeError, match='closed'):
        pool.reset()
    with pytest.raises(ValueError, match='num_groups=3'):
        AleVectorPool(AtariConfig(game='pong'), 4, num_groups=3)


@pytest.mark.slow
def test_a_lost_life_restarts_the_stacks_here_as_atari_env_does():
    # Breakout without FIRE at reset (ale_py takes the first frame before its FIRE press): the
    # same game in both pools, lost lives (terminal, no reset) included.
    config = AtariConfig(game='breakout', resize='linear', noop_max=0, fire_reset=False,
                         stack=3, episodic_life=True, life_loss_restarts_stack=True)
    vector, serial = AleVectorPool(config, 2, num_threads=1), SerialPool(config, 2)
    try:
        np.testing.assert_array_equal(vector.reset(), serial.reset())
        lives_lost = 0
        for step_actions in _random_actions(400, 2, config.num_actions()):
            expected, actual = serial.step(step_actions), vector.step(step_actions)
            for name in ('observations', 'terminals', 'dones'):
                np.testing.assert_array_equal(getattr(actual, name), getattr(expected, name),
                                              err_msg=name)
            lives_lost += int((expected.terminals & ~expected.dones).sum())
        assert lives_lost >= 4
    finally:
        vector.close()
        serial.close()


@pytest.mark.parametrize('bindings, message', [
    (dict(fire_reset=True, life_loss_restarts_stack=True, fire_on_life_loss=True),
     "fire_on_life_loss=True is not supported by AleVectorPool"),
    (dict(life_loss_restarts_stack=True, resize='area'),
     "life_loss_restarts_stack=True with resize='area' is not supported by AleVectorPool"),
])
def test_life_loss_handling_the_vector_env_cannot_do_is_refused(bindings, message):
    config = AtariConfig(game='breakout', episodic_life=True, **bindings)
    with pytest.raises(ValueError, match=message):
        AleVectorPool.validate(config, 2)


def test_a_second_reset_restarts_every_stack_resized_here():
    config = AtariConfig(game='pong', resize='linear', noop_max=0, fire_reset=False, stack=3)
    pool = AleVectorPool(config, 3, num_threads=1)
    try:
        pool.reset()
        for step_actions in _random_actions(5, 3, config.num_actions()):
            pool.step(step_actions)
        observations = pool.reset()
        assert not observations[..., :-1].any() and observations[..., -1].all(axis=(1, 2)).any()
    finally:
        pool.close()
