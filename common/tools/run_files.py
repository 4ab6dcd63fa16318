"""Reading the common run format every paper writes (invocation.json, operative_config.gin,
metrics.csv, eval.csv), for common.compare, common.tools.plots and common.results."""
import csv
import math
import os
import re

from common.launch import app
from common.run import run_record
from common.system import errors
from common.system import machine_load

# The environment a run trained on, as its operative_config.gin records it.
_ENV_PATTERN = re.compile(r"^(?:AtariConfig\.game|GymConfig\.env_id) = '([^']+)'", re.MULTILINE)


def read_csv(path):
    """The rows of a CSV file as dicts; [] if there is no such file."""
    if not os.path.exists(path):
        return []
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


def number(text):
    """text as a float, NaN where it is empty or not a number."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def read_paper(run_dir):
    """The paper recorded in run_dir's invocation.json; ConfigError if it is not a run."""
    invocation = app.read_json(os.path.join(run_dir, app.INVOCATION_FILE))
    if invocation is None:
        raise errors.ConfigError(f'{run_dir!r} is not a run directory (no {app.INVOCATION_FILE})')
    return str(invocation.get('paper', '?'))


def read_game(run_dir):
    """The game (or gymnasium id) of run_dir's operative_config.gin, '?' where none is."""
    try:
        with open(os.path.join(run_dir, app.OPERATIVE_CONFIG_FILE)) as f:
            found = _ENV_PATTERN.search(f.read())
    except OSError:
        return '?'
    return found.group(1) if found else '?'


def run_label(run_dir):
    """How a run is named in figures: its paper and its directory name."""
    return f'{read_paper(run_dir)}: {os.path.basename(os.path.normpath(run_dir))}'


def machines(run_dir):
    """The machines the run's sessions ran on (run.json), each described once in the order
    first met (common.system.machine_load.describe); [] if unrecorded."""
    try:
        recorded = app.read_json(os.path.join(run_dir, app.RUN_FILE)) or {}
    except errors.ConfigError:
        return []
    described = []
    for session in recorded.get(run_record.SESSIONS, []):
        text = machine_load.describe(session.get('machine')) if isinstance(session, dict) \
            else None
        if text and text not in described:
            described.append(text)
    return described
