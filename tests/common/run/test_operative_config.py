"""operative_config.check_env_unchanged across the life-loss options: what an old record did,
not the default, and nothing where the game has no lives."""
import os

import pytest

from common.launch import app
from common.run import operative_config
from common.system import errors

_RECORDED_FAST_DQN = """# Parameters for AtariConfig:
# ==============================================================================
AtariConfig.episodic_life = True
AtariConfig.fire_reset = True
AtariConfig.game = '{game}'
AtariConfig.resize = 'linear'
"""


@pytest.mark.parametrize('game', ['breakout', 'pong'])
def test_a_resume_across_the_life_loss_options_is_refused_only_where_lives_are_lost(tmp_path,
                                                                                     game):
    """Fast DQN recorded before 2026-12-06 pressed FIRE after a lost life (fire_reset with
    episodic_life) and kept the stack: resuming it with today's handling changes both in
    Breakout, where the old value is what it did, not the default; in Pong (no lives) neither."""
    from common.envs.atari import AtariConfig
    run_dir = str(tmp_path / 'run')
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, app.OPERATIVE_CONFIG_FILE), 'w') as f:
        f.write(_RECORDED_FAST_DQN.format(game=game))
    now = AtariConfig(game=game, resize='linear', episodic_life=True, fire_reset=True,
                      life_loss_restarts_stack=True)
    if game == 'pong':
        operative_config.check_env_unchanged(run_dir, now, [])
        return
    with pytest.raises(errors.ConfigError) as raised:
        operative_config.check_env_unchanged(run_dir, now, [])
    message = str(raised.value)
    assert ('AtariConfig.fire_on_life_loss = True (absent from its config: what it did then), '
            'now False') in message
    assert ('AtariConfig.life_loss_restarts_stack = False (absent from its config: the '
            'default), now True') in message
