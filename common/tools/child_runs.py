"""Runs of a preset, one after another, each in its own process: what the suite (games) and the
sweep (grid points) commands share. A run is an ordinary run directory trained by its paper's
entry point to a step budget (`--stop_at_steps`), its output prefixed with a tag naming it and
its place; a directory's newest checkpoint tells how far it got, so a rerun resumes it.
"""
import ctypes
import math
import os
import signal
import subprocess
import sys

from common.launch import app
from common.launch import registry
from common.run import superseded
from common.system import errors
from common.system import file_writes
from common.tools import run_files

__all__ = ('checkpoint_steps', 'open_record', 'stop_reached', 'stop_flags', 'train',
           'train_in_turn')

_PR_SET_PDEATHSIG = 1
# Looked up before any fork: the child only calls it (no library loading between fork and exec).
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl


def checkpoint_steps(run_dir):
    """Env steps of run_dir's newest checkpoint on disk (0 if none)."""
    from common.run import checkpoint  # pylint: disable=import-outside-toplevel (TensorFlow)
    newest = checkpoint.on_disk(os.path.join(run_dir, checkpoint.CHECKPOINT_DIR))
    return int(os.path.basename(newest[0]).split('-')[1]) if newest else 0


def stop_reached(run_dir, stop, steps):
    """Why run_dir, saved at steps, has reached stop (a session_stop.SessionStop of a score or
    a number of minutes), read from its files as the run's own check reads them (the last
    episodes' scores, the run's clock in its last row); None where it has not."""
    if stop is None or not steps:
        return None

    def upto(name):
        return superseded.read_history(os.path.join(run_dir, name), upto=steps)

    scores = [run_files.number(row.get('score')) for row in upto('episodes.csv')[-stop.window:]]
    rows = upto('metrics.csv')
    logged = run_files.number(rows[-1].get('wall_time')) if rows else math.nan
    # A session interrupted after its last row saved a later clock than that row's.
    elapsed = max(0.0 if math.isnan(logged) else logged, saved_seconds(run_dir))
    return stop.reason(steps, scores, elapsed)


def saved_seconds(run_dir):
    """The run's clock saved in its newest checkpoint (0.0 where none can be read)."""
    from common.run import checkpoint  # pylint: disable=import-outside-toplevel (TensorFlow)
    try:
        return checkpoint.trained_seconds(run_dir)
    except Exception:  # pylint: disable=broad-except (no or no readable checkpoint: the rows)
        return 0.0


def stop_flags(stop):
    """The entry point flags of stop (a SessionStop of a score or minutes, or None)."""
    if stop is None:
        return []
    return ([f'--stop_at_score={stop.score!r}'] if stop.score is not None else []) + (
        [f'--stop_at_minutes={stop.minutes!r}'] if stop.minutes is not None else [])


def open_record(directory, file_name, identity, flag):
    """The JSON record (file_name) of a directory of runs, created with identity (the paper,
    preset and bindings, ...) for a new one; ConfigError naming flag when it holds runs of
    another identity, which this command would mix with its own."""
    path = os.path.join(directory, file_name)
    record = app.read_json(path)
    if record is None:
        os.makedirs(directory, exist_ok=True)
        record = dict(identity)
        file_writes.write_json(path, record)
    elif {key: record.get(key) for key in identity} != identity:
        differences = '; '.join(f'{key}: {record.get(key)!r} there, {value!r} here'
                                for key, value in identity.items() if record.get(key) != value)
        raise errors.ConfigError(f'{flag}={directory} holds runs of another command '
                                 f'({differences}): give the same command, or another {flag}')
    return record, path


def _die_with_parent():
    """In the child: SIGTERM (a checkpoint, then its end) if the parent's process dies."""
    _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


def train(paper, gin_files, gin_bindings, run_dir, steps, tag, extra_flags=(), on_line=None):
    """Trains run_dir to steps env steps with paper's entry point in a process of its own (its
    own session, so a Ctrl-C reaches it once, through here), its flags followed by extra_flags
    (e.g. --resume_from), each output line prefixed with tag (and handed to on_line after);
    returns its exit status.
    KeyboardInterrupt (app.execute's Ctrl-C or SIGTERM) is passed to the child, which saves a
    checkpoint, and raised again once it has ended."""
    command = [sys.executable, '-m', f'{paper}{registry.SUFFIX}.main']
    command += [f'--gin_file={path}' for path in gin_files]
    command += [f'--gin_bindings={binding}' for binding in gin_bindings]
    command += [f'--stop_at_steps={steps}', f'--run_dir={run_dir}', *extra_flags]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             bufsize=1, env={**os.environ, 'PYTHONUNBUFFERED': '1'},
                             start_new_session=True, preexec_fn=_die_with_parent)
    interrupted = False
    while True:
        try:
            for line in child.stdout:
                print(f'{tag} {line}', end='', flush=True)
                if on_line is not None:
                    try:
                        on_line(line)
                    except Exception as error:  # pylint: disable=broad-except (advice only)
                        print(f'{tag} stopped watching the output lines ({error!r})', flush=True)
                        on_line = None
            break
        except KeyboardInterrupt:
            if not interrupted:
                interrupted = True
                child.send_signal(signal.SIGINT)
    status = child.wait()
    if interrupted:
        raise KeyboardInterrupt
    return status


def train_in_turn(paper, gin_files, gin_bindings, run_dir, steps, tag, place, extra_flags=(),
                  on_line=None, stop=None):
    """train(...) of one run among several, place = (kind, index, count, name), e.g. ('game', 1,
    3, 'breakout'), ending early at stop (a SessionStop of a score or minutes, or None); returns
    the env steps of its newest checkpoint. A Ctrl-C says how to resume and goes on;
    errors.RunError if the run failed or saved short of steps without reaching stop, so that the
    runs after it do not start."""
    kind, index, count, name = place
    try:
        status = train(paper, gin_files, gin_bindings, run_dir, steps, tag,
                       [*extra_flags, *stop_flags(stop)], on_line)
    except KeyboardInterrupt:
        saved = checkpoint_steps(run_dir)
        kept = (f'its checkpoint at step {saved:,} saved' if saved else
                'stopped before its first checkpoint, nothing of it to keep')
        print(f'{tag} interrupted in {kind} {index} of {count} ({name}; {kept}): rerun the same '
              'command to resume', file=sys.stderr)
        raise
    reached = checkpoint_steps(run_dir)
    if status != 0 or (reached < steps and not stop_reached(run_dir, stop, reached)):
        raise errors.RunError(
            f'{name} ({kind} {index} of {count}) ended with exit status {status} at '
            f'{reached:,} steps; {run_dir} keeps what it saved and the {kind}s after it did not '
            'start: rerun the same command to resume')
    return reached
