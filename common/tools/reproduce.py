"""Does a run's recorded command still configure what the run trained with? Parses the
invocation's gin files and bindings with today's code and compares the bindings that gives with
the run's operative_config.gin, so a published curve is not passed off as today's preset."""
import os

import gin

from common.launch import app
from common.launch import registry
from common.run import errors
from common.run import gin_text

def _resolve(path):
    """A recorded gin file path: as given, else under the repository (commands run there)."""
    return path if os.path.isfile(path) else os.path.join(app.PROJECT_ROOT, path)


def differences(run_dir):
    """Lines naming each binding today's code gives the recorded command that the run's
    operative config does not hold (another value, or absent); [] if it reproduces."""
    invocation = app.read_invocation(run_dir) or {}
    path = os.path.join(run_dir, app.OPERATIVE_CONFIG_FILE)
    if not os.path.isfile(path):
        return [f'{run_dir} has no {app.OPERATIVE_CONFIG_FILE} to compare with']
    try:
        entry = registry.entry_point(invocation.get('paper', '?'))
        entry.configure([_resolve(name) for name in invocation.get('gin_files', [])],
                        invocation.get('gin_bindings', []))
    except errors.ConfigError as error:
        return [f'the recorded command no longer parses: {error}']
    # A paper's MOVED maps bindings it has renamed to their names today.
    moved = getattr(entry, 'MOVED', {})
    with open(path) as f:
        recorded = {moved.get(name, name): value
                    for name, value in gin_text.operative_bindings(f.read()).items()}
    today = gin_text.operative_bindings(gin.operative_config_str())
    gin.clear_config()
    return [f'{name} = {value} today, {recorded[name] if name in recorded else "absent"} in '
            f'the run' for name, value in sorted(today.items()) if recorded.get(name) != value]
