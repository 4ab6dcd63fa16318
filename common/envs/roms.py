"""What an ALE ROM holds, read once per game: its action sets and whether it counts lives, and
the quiet, seeded emulator every Atari environment here steps (common/envs/atari.py)."""
import functools

import ale_py

FIRE = ale_py.Action.FIRE.value
NOOP = ale_py.Action.NOOP.value


@functools.lru_cache(maxsize=None)
def action_set(game: str, full_action_space: bool) -> tuple:
    """The game's ALE action ids (minimal set unless full), cached because it loads the ROM."""
    ale = new_ale(game, seed=0, repeat_action_probability=0.0)
    actions = ale.getLegalActionSet() if full_action_space else ale.getMinimalActionSet()
    return tuple(action.value for action in actions)


@functools.lru_cache(maxsize=None)
def has_lives(game: str) -> bool:
    """Whether the game counts lives (Breakout 5; Pong none), cached because it loads the ROM."""
    ale = new_ale(game, seed=0, repeat_action_probability=0.0)
    return ale.lives() > 0


def new_ale(game: str, seed: int, repeat_action_probability: float) -> ale_py.ALEInterface:
    """An ALEInterface with the ROM loaded, seeded and quiet, one emulator frame per act()."""
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    ale = ale_py.ALEInterface()
    ale.setInt('random_seed', int(seed) % 2**31)
    ale.setFloat('repeat_action_probability', float(repeat_action_probability))
    ale.setInt('frame_skip', 1)
    ale.loadROM(ale_py.roms.get_rom_path(game))
    return ale
