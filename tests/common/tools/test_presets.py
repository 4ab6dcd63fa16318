"""Every paper preset names its paper and runs any game by binding the game alone: each builds,
on each game of the suites this project runs, the game's own environment."""
import os

import numpy as np
import pytest

from common.envs import atari
from common.launch import app
from common.system import errors
from common.tools import atari5
from common.tools import presets

# (preset, the paper that owns it)
PRESETS = [('gin/paac/pong.gin', 'paac'), ('gin/paac/original_code.gin', 'paac'),
           ('gin/paac/pong_fast.gin', 'paac'),
           ('gin/ga3c/pong.gin', 'ga3c'), ('gin/ga3c/paper.gin', 'ga3c'),
           ('gin/dqn/pong.gin', 'dqn'), ('gin/dqn/paper.gin', 'dqn'),
           ('gin/fast/pong.gin', 'accel')] + [
    (f'gin/accel/{name}', 'accel') for name in sorted(os.listdir(
        os.path.join(app.PROJECT_ROOT, 'gin', 'accel'))) if name.endswith('_pong.gin')]
# Atari-5 (Aitchison, Sweetser & Hutter 2023; common/tools/atari5.py), the scorecard's games, and
# the other suites run here.
GAMES = tuple(atari5.SUBSETS['atari5'].weights) + ('breakout', 'seaquest', 'space_invaders')
_BUILT = set()  # environment configs already stepped (many presets share one)


def _path(preset):
    return os.path.join(app.PROJECT_ROOT, preset)


@pytest.mark.slow
@pytest.mark.parametrize('preset, paper', PRESETS)
def test_each_preset_names_its_paper_and_builds_every_suite_game(preset, paper):
    assert {'battle_zone', 'double_dunk', 'name_this_game', 'phoenix', 'qbert'} <= set(GAMES)
    found, main = presets.paper_of([_path(preset)], [])
    assert found == paper
    pong = presets.configure_game(main, [_path(preset)], [], 'pong').env_config
    for game in GAMES:
        env_config = presets.configure_game(main, [_path(preset)], [], game).env_config
        assert env_config.game == game
        # Nothing else of the preset depends on the game.
        assert {**vars(env_config), 'game': 'pong'} == vars(pong)
        if repr(env_config) in _BUILT:
            continue
        _BUILT.add(repr(env_config))
        env = atari.AtariEnv(env_config, seed=0)
        observation = env.reset()
        assert observation.shape == tuple(env_config.observation_shape)
        assert env_config.num_actions() == len(atari.action_set(game, False))
        # FIRE after a reset exactly where the preset asks for it and the game has FIRE.
        assert env_config.presses_fire == (env_config.fire_reset and atari.FIRE in
                                           atari.action_set(game, env_config.full_action_space))
        for action in range(env_config.num_actions()):
            observation, reward, _, _ = env.step(action)
        assert observation.dtype == np.uint8 and np.isfinite(reward)
        env.close()


def _life_handling_table():
    """{folder: (terminal, restart, fire at start, fire after a lost life)} from the table in
    docs/code_map.md."""
    with open(os.path.join(app.PROJECT_ROOT, 'docs', 'code_map.md')) as f:
        rows = [line for line in f if line.startswith('| `gin/')]
    table = {}
    for row in rows:
        cells = [cell.strip() for cell in row.strip().strip('|').split('|')]
        for folder in cells[0].replace('`', '').split(', '):
            table[folder.strip('/')] = tuple(cell == 'yes' for cell in cells[1:5])
    return table


def test_the_lives_and_fire_table_holds_for_every_preset():
    table = _life_handling_table()
    assert set(table) == {'gin/paac', 'gin/ga3c', 'gin/dqn', 'gin/accel', 'gin/fast'}
    folders = {os.path.dirname(preset) for preset, _ in PRESETS}
    presets_by_folder = [(os.path.join('gin', folder, name), folder) for folder in (
        'paac', 'ga3c', 'dqn', 'accel', 'fast') for name in sorted(os.listdir(
            os.path.join(app.PROJECT_ROOT, 'gin', folder))) if name.endswith('.gin')]
    assert folders <= {f'gin/{folder}' for _, folder in presets_by_folder}
    for preset, folder in presets_by_folder:
        if preset in ('gin/ga3c/large.gin', 'gin/dqn/standard.gin', 'gin/accel/atari.gin'):
            continue  # added to or included by other presets, not run alone
        _, main = presets.paper_of([_path(preset)], [])
        config = presets.configure_game(main, [_path(preset)], [], 'breakout').env_config
        handling = (config.episodic_life, config.life_loss_restarts_stack, config.fire_reset,
                    config.fire_on_life_loss)
        assert handling == table[f'gin/{folder}'], preset


def test_a_preset_of_no_paper_and_a_gym_preset_are_refused(tmp_path):
    empty = tmp_path / 'empty.gin'
    empty.write_text("AtariConfig.game = 'pong'\n")
    with pytest.raises(errors.ConfigError, match='configures none of the papers'):
        presets.paper_of([str(empty)], [])
    name, main = presets.paper_of([_path('gin/paac/pong.gin')], [])
    gym = ['PAACConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'"]
    with pytest.raises(errors.ConfigError, match="'CartPole-v1', not an Atari game"):
        presets.configure_game(main, [_path('gin/paac/pong.gin')], gym, 'breakout')
    with pytest.raises(errors.ConfigError, match='breakuot'):
        presets.configure_game(main, [_path('gin/paac/pong.gin')], [], 'breakuot')
    assert name == 'paac'
