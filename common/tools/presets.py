"""Which paper a preset (gin files plus bindings) configures, and that preset bound to a game.

The suite and sweep commands take a preset, not a paper: the paper is the one whose config
class the preset binds (`PAACConfig.*` for gin/paac/pong.gin), found through each paper's own
`configure`, so a preset of one paper is never run by another. Imports the paper packages (and
so TensorFlow) through common.launch.registry.
"""
import re

import gin

from common.envs import atari
from common.launch import app
from common.launch import registry
from common.system import checks
from common.system import errors

__all__ = ('game_binding', 'paper_of', 'configure_game')


def game_binding(game):
    """The binding that puts a preset on game (after the preset's own, so it wins)."""
    return f"AtariConfig.game = '{game}'"


def _binds(class_name):
    """Whether the parsed gin config binds a parameter of class_name."""
    return re.search(rf'(?m)^(?:[\w.]*\.)?{re.escape(class_name)}\.\w+\s*=',
                     gin.config_str()) is not None


def paper_of(gin_files, gin_bindings, paper=None):
    """(paper name, its main module) of the paper whose config class the preset binds;
    ConfigError in one line when none or several do, or when paper is given and the preset
    configures another one."""
    claimed, refusals = [], []
    for name in registry.papers():
        main = registry.entry_point(name)
        try:
            config = main.configure(gin_files, gin_bindings)
        except errors.ConfigError as error:
            refusals.append(f'{name}: {error}')
            continue
        if _binds(type(config).__name__):
            claimed.append((name, main, type(config).__name__))
    preset = ' '.join(list(gin_files) + [f'--gin_bindings={b!r}' for b in gin_bindings])
    if not claimed:
        raise errors.ConfigError(f'{preset or "no --gin_file"} configures none of the papers '
                                 f'({"; ".join(refusals) or "no paper config class is bound"})')
    if len(claimed) > 1:
        raise errors.ConfigError(f'{preset} binds the configs of several papers: '
                                 f'{", ".join(f"{n} ({c})" for n, _, c in claimed)}; give one')
    name, main, class_name = claimed[0]
    if paper is not None and paper != name:
        raise errors.ConfigError(f'--paper={paper!r}, but {preset} configures {name} '
                                 f'({class_name}); give a {paper} preset or drop --paper')
    return name, main


def configure_game(main, gin_files, gin_bindings, game):
    """The validated config of the preset on game (ConfigError in one line naming what is
    wrong: a game that is no ale_py ROM, a preset of a gymnasium environment, ...)."""
    config = main.configure(gin_files, list(gin_bindings) + [game_binding(game)])
    env_config = config.env_config
    checks.require(isinstance(env_config, atari.AtariConfig),
                   f'{" ".join(gin_files)} trains on {app.env_name(env_config)!r}, not an Atari '
                   'game: a suite runs Atari presets')
    return config
