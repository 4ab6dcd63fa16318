"""AtariEnv: preprocessing against a hand-driven ALE, episode bookkeeping, validation."""
import os

import ale_py
import cv2
import gin
import numpy as np
import pytest

from common.envs.atari import AtariConfig, action_set
from common.launch import app


def _reference_ale(game: str, seed: int) -> ale_py.ALEInterface:
    """A bare ALE seeded as AtariEnv seeds its own, one frame per act()."""
    ale = ale_py.ALEInterface()
    ale.setInt('random_seed', seed)
    ale.setFloat('repeat_action_probability', 0.0)
    ale.loadROM(ale_py.roms.get_rom_path(game))
    return ale


def _rollout(config: AtariConfig, seed: int, num_steps: int, action_seed: int = 0) -> list:
    env = config.make(seed)
    rng = np.random.default_rng(action_seed)
    trajectory = [env.reset().copy()]
    for _ in range(num_steps):
        observation, reward, terminal, done = env.step(int(rng.integers(env.num_actions)))
        trajectory.append((observation.copy(), reward, terminal, done))
        if done:
            trajectory.append(env.reset().copy())
    return trajectory


def _trajectories_equal(first: list, second: list) -> bool:
    if len(first) != len(second):
        return False
    for a, b in zip(first, second):
        if isinstance(a, tuple):
            if not (np.array_equal(a[0], b[0]) and a[1:] == b[1:]):
                return False
        elif not np.array_equal(a, b):
            return False
    return True


@pytest.mark.parametrize('variant, shape', [('nature', (84, 84, 4)), ('stooke', (104, 80, 4))])
def test_observation_shape_dtype_and_zero_padded_reset(variant, shape):
    config = AtariConfig(variant=variant, decorrelation_steps=0)
    env = config.make(0)
    assert config.observation_shape == env.observation_shape == shape
    observation = env.reset()
    assert observation.shape == shape and observation.dtype == np.uint8
    assert not observation[..., :-1].any() and observation[..., -1].any()
    observation, *_ = env.step(0)
    assert observation.shape == shape and observation.dtype == np.uint8


@pytest.mark.parametrize('variant, resize, downsample', [
    ('nature', 'area', 'average'), ('nature', 'nearest', 'average'),
    ('nature', 'linear', 'average'), ('stooke', 'area', 'average'), ('stooke', 'area', 'skip')])
def test_newest_frame_is_max_of_last_two_raw_frames(variant, resize, downsample):
    seed = 5
    config = AtariConfig(game='pong', variant=variant, resize=resize, downsample=downsample,
                         decorrelation_steps=0)
    env = config.make(seed)
    env.reset()
    reference = _reference_ale('pong', seed)
    for _ in range(env.noop_count):
        reference.act(0)
    actions = action_set('pong', False)
    rng = np.random.default_rng(1)
    previous = np.zeros((210, 160), np.uint8)
    last = np.zeros((210, 160), np.uint8)
    pooling_mattered = False
    halving_mattered = False  # the 2x2 mean differed from every second pixel somewhere
    expected_frames = []
    for _ in range(40):
        action = int(rng.integers(len(actions)))
        observation, *_ = env.step(action)
        for frame in range(4):
            reference.act(actions[action])
            if frame == 2:
                reference.getScreenGrayscale(previous)
        reference.getScreenGrayscale(last)
        pooled = np.maximum(previous, last)
        pooling_mattered |= not np.array_equal(pooled, last)
        if resize == 'nearest':
            # The pixel under each output pixel's centre, as scipy.misc.imresize's 'nearest'.
            rows = ((np.arange(84) + 0.5) * 210 / 84).astype(int)
            cols = ((np.arange(84) + 0.5) * 160 / 84).astype(int)
            expected = pooled[rows][:, cols]
        elif resize == 'linear':
            expected = cv2.resize(pooled, (84, 84), interpolation=cv2.INTER_LINEAR)
        elif variant == 'nature':
            expected = cv2.resize(pooled, (84, 84), interpolation=cv2.INTER_AREA)
        elif downsample == 'skip':
            expected = pooled[1:-1:2, ::2]
        else:
            # rlpyt's own expression (rlpyt/envs/atari/atari_env.py), flag and all.
            expected = cv2.resize(pooled[1:-1], (80, 104), cv2.INTER_NEAREST)
            block_means = pooled[1:-1].reshape(104, 2, 80, 2).mean(axis=(1, 3))
            assert np.abs(expected - block_means).max() <= 0.5
            halving_mattered |= not np.array_equal(expected, pooled[1:-1:2, ::2])
        expected_frames.append(expected)
        np.testing.assert_array_equal(observation[..., -1], expected)
        for age in range(1, min(4, len(expected_frames))):
            np.testing.assert_array_equal(observation[..., -1 - age], expected_frames[-1 - age])
    assert pooling_mattered
    assert halving_mattered == (variant == 'stooke' and downsample == 'average')


def test_noop_count_is_uniform_in_one_to_noop_max():
    env = AtariConfig(noop_max=5).make(0)
    counts = set()
    for _ in range(60):
        env.reset()
        counts.add(env.noop_count)
        frame_number = env._ale.getEpisodeFrameNumber()  # pylint: disable=protected-access
        assert frame_number == env.noop_count
    assert counts == {1, 2, 3, 4, 5}
    env = AtariConfig(noop_max=0).make(0)
    env.reset()
    assert env.noop_count == 0


def test_reward_clipping_keeps_unclipped_episode_return():
    clipped = AtariConfig(game='space_invaders', clip_rewards=True).make(3)
    raw = AtariConfig(game='space_invaders', clip_rewards=False).make(3)
    clipped.reset()
    raw.reset()
    rng = np.random.default_rng(0)
    raw_rewards = []
    for _ in range(300):
        action = int(rng.integers(clipped.num_actions))
        _, clipped_reward, _, _ = clipped.step(action)
        _, raw_reward, _, _ = raw.step(action)
        assert abs(clipped_reward) <= 1 and clipped_reward == np.clip(raw_reward, -1, 1)
        raw_rewards.append(raw_reward)
    assert max(abs(reward) for reward in raw_rewards) > 1
    assert clipped.episode_return == raw.episode_return == sum(raw_rewards)


def test_episode_cap_ends_with_terminal_and_done():
    env = AtariConfig(max_episode_steps=50).make(0)
    env.reset()
    for step in range(1, 51):
        _, _, terminal, done = env.step(0)
        assert (terminal, done) == ((True, True) if step == 50 else (False, False))
    assert env.episode_length == 50
    env.reset()
    assert env.episode_length == 0


def test_same_seed_same_trajectory_different_seed_differs():
    config = AtariConfig(max_episode_steps=60, repeat_action_probability=0.25)
    first = _rollout(config, seed=7, num_steps=150)
    assert _trajectories_equal(first, _rollout(config, seed=7, num_steps=150))
    assert not _trajectories_equal(first, _rollout(config, seed=8, num_steps=150))


def test_episodic_life_gives_terminal_without_done():
    env = AtariConfig(game='breakout', episodic_life=True, fire_reset=True).make(0)
    env.reset()
    lives = env._ale.lives()  # pylint: disable=protected-access
    rng = np.random.default_rng(0)
    life_losses = 0
    for _ in range(5000):
        _, _, terminal, done = env.step(int(rng.integers(env.num_actions)))
        if done:
            break
        if terminal:
            life_losses += 1
            assert env._ale.lives() == lives - life_losses  # pylint: disable=protected-access
    assert done and terminal
    assert life_losses == lives - 1
    assert env.episode_length > 0


def test_decorrelation_steps_only_at_first_reset():
    env = AtariConfig(variant='stooke', max_episode_steps=0).make(2)
    assert env.config.resolved_decorrelation_steps == 100
    env.reset()
    assert 0 <= env.episode_length <= 100
    env.reset()
    assert env.episode_length == 0


def test_num_actions():
    assert AtariConfig(game='pong').num_actions() == 6
    assert AtariConfig(game='pong', full_action_space=True).num_actions() == 18


@pytest.mark.parametrize('field, value, message', [
    ('game', 'pongg', "'pongg'"),
    ('variant', 'dqn', "'dqn'"),
    ('frame_skip', 0, 'frame_skip=0'),
    ('stack', 0, 'stack=0'),
    ('noop_max', -1, 'noop_max=-1'),
    ('repeat_action_probability', 1.5, 'repeat_action_probability=1.5'),
    ('max_episode_steps', -1, 'max_episode_steps=-1'),
    ('screen_size', (84,), r'screen_size=\(84,\)'),
    ('decorrelation_steps', -3, 'decorrelation_steps=-3'),
    ('resize', 'cubic', "resize='cubic'; allowed"),
    ('downsample', 'max', "downsample='max'; allowed"),
])
def test_validation_names_the_bad_value(field, value, message):
    with pytest.raises(ValueError, match=message):
        AtariConfig(**{field: value}).validate()


def _bilinear(image, out_shape):
    """Hand bilinear resize: each output pixel's centre mapped into the input, (i + 0.5) *
    in / out - 0.5, clamped to the edges, weighted over its 2x2 neighbours."""
    axes = []
    for size_in, size_out in zip(image.shape, out_shape):
        x = np.clip((np.arange(size_out) + 0.5) * size_in / size_out - 0.5, 0, size_in - 1)
        low = np.floor(x).astype(int)
        axes.append((low, np.minimum(low + 1, size_in - 1), x - low))
    (r0, r1, wr), (c0, c1, wc) = axes
    image = image.astype(np.float64)
    top = image[r0][:, c0] * (1 - wc) + image[r0][:, c1] * wc
    bottom = image[r1][:, c0] * (1 - wc) + image[r1][:, c1] * wc
    return top * (1 - wr[:, None]) + bottom * wr[:, None]


def test_linear_resize_is_bilinear_not_area():
    env = AtariConfig(game='pong', resize='linear', decorrelation_steps=0).make(3)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(30):
        observation, *_ = env.step(int(rng.integers(env.num_actions)))
    pooled = env._pooled
    by_hand = _bilinear(pooled, (84, 84))
    # cv2's uint8 path rounds 11-bit fixed-point weights: within one grey level of the hand value.
    assert np.abs(observation[..., -1].astype(np.float64) - by_hand).max() <= 1.0
    area = cv2.resize(pooled, (84, 84), interpolation=cv2.INTER_AREA)
    assert not np.array_equal(observation[..., -1], area)


def test_average_downsample_needs_the_stooke_variant():
    with pytest.raises(ValueError, match="downsample='average' needs variant='stooke'"):
        AtariConfig(variant='nature', downsample='average').validate()


def test_a_recorded_stooke_config_without_downsample_keeps_its_skipped_pixels(tmp_path):
    # Runs recorded before the field (e.g. the published accel-ppo-pong-rerun) evaluate, watch and
    # resume on the frames they were trained on, not on the presets' 'average'.
    published = os.path.join(app.PROJECT_ROOT, 'docs', 'results', 'accel-ppo-pong-rerun',
                             app.OPERATIVE_CONFIG_FILE)
    with open(published) as f:
        atari_lines = [line for line in f if line.startswith('AtariConfig.')]
    assert "AtariConfig.variant = 'stooke'\n" in atari_lines
    assert not any('downsample' in line for line in atari_lines)
    (tmp_path / app.OPERATIVE_CONFIG_FILE).write_text(''.join(atari_lines))
    app.parse_recorded_config(str(tmp_path))
    env = AtariConfig()  # gin binds the recorded AtariConfig values
    gin.clear_config()
    assert (env.variant, env.downsample) == ('stooke', 'skip')


@pytest.mark.parametrize('resize', ['nearest', 'linear'])
def test_other_resizes_need_the_nature_variant(resize):
    with pytest.raises(ValueError, match=f"resize='{resize}' needs variant='nature'"):
        AtariConfig(variant='stooke', resize=resize).validate()


def test_fire_reset_presses_fire_only_in_games_that_have_it():
    """As baselines' wrap_deepmind: the DQN preset runs games without FIRE unchanged."""
    freeway = AtariConfig(game='freeway', fire_reset=True)
    freeway.validate()
    assert not freeway.presses_fire and AtariConfig(game='breakout', fire_reset=True).presses_fire
    plain = AtariConfig(game='freeway', fire_reset=False).make(3)
    with_flag = freeway.make(3)
    np.testing.assert_array_equal(plain.reset(), with_flag.reset())
    for action in [0, 1, 2] * 20:
        np.testing.assert_array_equal(plain.step(action)[0], with_flag.step(action)[0])


@pytest.mark.parametrize('game, close', [('pongg', 'pong'), ('Space Invaders', 'space_invaders'),
                                         ('breakuot', 'breakout')])
def test_an_unknown_game_offers_near_matches(game, close):
    with pytest.raises(ValueError) as raised:
        AtariConfig(game=game).validate()
    message = str(raised.value)
    assert 'close ones: ' in message and close in message.split('close ones: ')[1].split(';')[0]


def test_a_game_with_no_near_match_offers_none():
    with pytest.raises(ValueError) as raised:
        AtariConfig(game='zzzzqqqq').validate()
    assert 'close ones' not in str(raised.value) and 'get_all_rom_ids' in str(raised.value)


@pytest.mark.slow
def test_decorrelated_start_states_differ_across_simulators_and_repeat_with_the_seed():
    """Stooke & Abbeel, section 4.1: every simulator starts after its own random number of
    uniform-random actions, so the envs of a pool start out of step; the seed fixes them."""
    from common.envs import pools  # pylint: disable=import-outside-toplevel
    config = AtariConfig(game='pong', variant='stooke', decorrelation_steps=200, noop_max=0)
    with pools.SerialPool(config, 6, seed=5) as pool:
        first = pool.reset().copy()
        lengths = [env.episode_length for env in pool._slice.envs]  # pylint: disable=protected-access
    with pools.SerialPool(config, 6, seed=5) as pool:
        np.testing.assert_array_equal(pool.reset(), first)
    with pools.SerialPool(config, 6, seed=6) as pool:
        assert not np.array_equal(pool.reset(), first)
    assert len(set(lengths)) == len(lengths)  # six different numbers of random steps
    assert len({frame.tobytes() for frame in first}) == len(first)
    undecorrelated = AtariConfig(game='pong', variant='stooke', decorrelation_steps=0,
                                 noop_max=0)
    with pools.SerialPool(undecorrelated, 6, seed=5) as pool:
        starts = pool.reset()
        assert len({frame.tobytes() for frame in starts}) == 1  # all alike without it
