"""AtariEnv at a lost life: terminal without a reset, the frame stack restarted where the config
says so (brett-daley/fast-dqn's HistoryWrapper after EpisodicLifeWrapper's done), and FIRE pressed
at a game's start only unless fire_on_life_loss (baselines' wrap_deepmind)."""
import numpy as np
import pytest

from common.envs import atari
from common.envs.atari import AtariConfig

LIVES = dict(game='breakout', episodic_life=True, screen_size=(42, 42), resize='linear')


def _first_lost_life(config, seed=0):
    """Steps random actions until a life is lost; (env, observation and frame numbers before and
    after that step)."""
    env = config.make(seed)
    observation = env.reset().copy()
    rng = np.random.default_rng(seed)
    for _ in range(3000):
        frame = env._ale.getEpisodeFrameNumber()  # pylint: disable=protected-access
        after, _, terminal, done = env.step(int(rng.integers(env.num_actions)))
        assert not done, 'the game ended before a life was lost'
        if terminal:
            return env, observation, after.copy(), frame, \
                env._ale.getEpisodeFrameNumber()  # pylint: disable=protected-access
        observation = after.copy()
    raise AssertionError('no life lost in 3000 random steps')


def test_a_lost_life_restarts_the_stack_and_presses_no_fire():
    config = AtariConfig(**LIVES, fire_reset=True, life_loss_restarts_stack=True)
    _, _, after, frame_before, frame_after = _first_lost_life(config)
    assert frame_after - frame_before == config.frame_skip  # the action's frames, no FIRE
    assert not after[..., :-1].any() and after[..., -1].any()


def test_fire_on_life_loss_presses_fire_after_a_lost_life():
    config = AtariConfig(**LIVES, fire_reset=True, life_loss_restarts_stack=True,
                         fire_on_life_loss=True)
    _, _, after, frame_before, frame_after = _first_lost_life(config)
    assert frame_after - frame_before == 2 * config.frame_skip  # the action's, then FIRE's
    assert not after[..., :-1].any() and after[..., -1].any()


def test_without_the_restart_the_stack_goes_on_across_a_lost_life():
    """As Stooke & Abbeel's presets did before 2026-12-06 (gin/published/accel-ppo-breakout.gin);
    rlpyt's atari_env.py restarts it, as the presets now do."""
    _, before, after, _, _ = _first_lost_life(AtariConfig(**LIVES))
    np.testing.assert_array_equal(after[..., :-1], before[..., 1:])
    assert after[..., 0].any()


@pytest.mark.parametrize('bindings, message', [
    (dict(life_loss_restarts_stack=True),
     'AtariConfig.life_loss_restarts_stack=True needs AtariConfig.episodic_life=True'),
    (dict(episodic_life=True, fire_on_life_loss=True),
     'AtariConfig.fire_on_life_loss=True needs AtariConfig.fire_reset=True'),
    (dict(episodic_life=True, fire_reset=True, fire_on_life_loss=True),
     'AtariConfig.fire_on_life_loss=True needs AtariConfig.life_loss_restarts_stack=True '
     r'\(the FIRE frame after a lost life'),
])
def test_a_life_loss_option_without_what_it_needs_is_refused(bindings, message):
    with pytest.raises(ValueError, match=message):
        AtariConfig(game='breakout', **bindings).validate()


def test_stack_restarts_at_terminal_only_where_the_atari_config_says_so():
    from common.envs import gym as gym_envs  # pylint: disable=import-outside-toplevel
    assert atari.stack_restarts_at_terminal(
        AtariConfig(**LIVES, life_loss_restarts_stack=True))
    assert not atari.stack_restarts_at_terminal(AtariConfig(**LIVES))
    assert not atari.stack_restarts_at_terminal(gym_envs.GymConfig())


def test_a_game_that_ends_in_the_fire_after_a_lost_life_ends_the_episode(monkeypatch):
    config = AtariConfig(**LIVES, fire_reset=True, life_loss_restarts_stack=True,
                         fire_on_life_loss=True)
    env = config.make(0)
    env.reset()
    monkeypatch.setattr(env, '_fire', lambda: True)  # as if the FIRE's frames ended the game
    rng = np.random.default_rng(0)
    for _ in range(3000):
        lives = env._ale.lives()  # pylint: disable=protected-access
        _, _, terminal, done = env.step(int(rng.integers(env.num_actions)))
        if terminal:
            break
    assert env._ale.lives() < lives  # pylint: disable=protected-access
    assert terminal and done
