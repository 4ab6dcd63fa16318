"""A run's operative configs (what gin actually built): written once a session's unit is
built, and read back on resume so a changed preset cannot change the run's environment."""
import datetime
import os

import gin

from common.system import errors
from common.system import file_writes
from common.system import gin_text

OPERATIVE_CONFIG_FILE = 'operative_config.gin'


def _latest_operative_config(run_dir):
    """The text of the newest operative config a session of run_dir wrote."""
    names = sorted(name for name in os.listdir(run_dir)
                   if name.startswith('operative_config.resume-') and name.endswith('.gin'))
    with open(os.path.join(run_dir, names[-1] if names else OPERATIVE_CONFIG_FILE)) as f:
        return f.read()


def check_env_unchanged(run_dir, env_config, gin_bindings):
    """Raises ConfigError when resuming run_dir would change what its agent sees (its
    environment config differs from the one it ran with: a preset or default changed since),
    unless this command binds each such field by name; checked before anything is written."""
    if not os.path.isfile(os.path.join(run_dir, OPERATIVE_CONFIG_FILE)):
        return
    changes = gin_text.env_config_changes(_latest_operative_config(run_dir), env_config,
                                          gin_bindings)
    if changes:
        raise errors.ConfigError(
            f'{run_dir} ran with other environment settings ({"; ".join(changes)}) and its '
            'checkpoints learned from what those made; to resume, bind each such field with '
            '--gin_bindings: its old value goes on as the run began, the new one changes it')


def write_operative_config(run_dir):
    """Writes what actually ran; a resumed run with another config gets a new file beside it."""
    path = os.path.join(run_dir, OPERATIVE_CONFIG_FILE)
    text = gin.operative_config_str()
    if os.path.exists(path):
        previous = _latest_operative_config(run_dir)
        if previous == text:
            return path
        changed = gin_text.changed_bindings(previous, text)
        if changed:
            print(f'resuming with {len(changed)} changed binding(s): ' + '; '.join(changed))
        stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
        path = os.path.join(run_dir, f'operative_config.resume-{stamp}.gin')
    file_writes.write_text(path, text)
    return path
