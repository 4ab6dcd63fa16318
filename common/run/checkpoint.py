"""Checkpoints of a run: model, optimizer and counters in run_dir/checkpoints, resumed on rerun.

A run never silently restarts from zero while one of its checkpoints can be read: a missing or
damaged index (`checkpoints/checkpoint`) falls back to the `ckpt-*` files on disk, a damaged
newest checkpoint to the one before, each with a one-line warning; if none can be read the run
stops (CheckpointError) before anything in the directory changes. Saves are written, read back
in full (sizes and checksums), and only then named in the index (write, then publish), so a
crash or a full disk mid-write leaves the index on the previous checkpoint.
"""
import os
import re
import shutil
import sys

import tensorflow as tf

from common.run import published as published_runs
from common.system import errors
from common.system import file_writes

CHECKPOINT_DIR = 'checkpoints'
_INDEX_FILE = re.compile(r'^ckpt-(\d+)\.index$')


class CheckpointError(errors.RunError):
    """A run's checkpoints cannot be used; the message names the directory or the file."""


class Counters(tf.Module):
    """Run counters that must survive a restart: env steps, episodes, elapsed wall time."""

    def __init__(self):
        super().__init__(name='counters')
        self.env_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name='env_steps')
        self.episodes = tf.Variable(0, dtype=tf.int64, trainable=False, name='episodes')
        self.elapsed_seconds = tf.Variable(0.0, dtype=tf.float64, trainable=False,
                                           name='elapsed_seconds')


def _warn(message, quiet=False):
    if not quiet:
        print(f'warning: {message}', file=sys.stderr, flush=True)


def _published(directory):
    """The index's checkpoints, oldest first (empty if the index is missing or unreadable)."""
    try:
        state = tf.train.get_checkpoint_state(directory)
    except (tf.errors.OpError, ValueError, OSError):  # a damaged text proto
        return None
    if state is None or not state.model_checkpoint_path:
        return None
    paths = [os.path.join(directory, os.path.basename(path))
             for path in state.all_model_checkpoint_paths]
    latest = os.path.join(directory, os.path.basename(state.model_checkpoint_path))
    return [path for path in paths if path != latest] + [latest]


def on_disk(directory):
    """Every ckpt-N prefix with an index file in directory, newest (largest N) first."""
    if not os.path.isdir(directory):
        return []
    numbered = [(int(found.group(1)), os.path.join(directory, f'ckpt-{found.group(1)}'))
                for found in map(_INDEX_FILE.match, os.listdir(directory)) if found]
    return [prefix for _, prefix in sorted(numbered, reverse=True)]


def candidates(directory, quiet=False):
    """Checkpoints to try, best first: the index's newest to oldest, then any other ckpt-N on
    disk, largest N first. Says so (unless quiet) when the index is missing or damaged."""
    published = _published(directory)
    disk = on_disk(directory)
    if published is None:
        if disk:
            _warn(f'{os.path.join(directory, "checkpoint")} is missing or unreadable; using the '
                  f'ckpt-* files in {directory}', quiet)
        published = []
    ordered = list(reversed(published))
    return ordered + [prefix for prefix in disk if prefix not in ordered]


def remove_partial(prefix):
    """Removes what a failed write of checkpoint prefix left: its _temp directory and any of
    its files, so a full disk is not kept full by the attempt."""
    directory, name = os.path.split(prefix)
    shutil.rmtree(prefix + '_temp', ignore_errors=True)
    for entry in os.listdir(directory) if os.path.isdir(directory) else ():
        if entry == name + '.index' or entry.startswith(name + '.data-'):
            os.remove(os.path.join(directory, entry))


def verify(prefix):
    """None if every tensor of the checkpoint reads back whole, else a one-line reason."""
    try:
        reader = tf.train.load_checkpoint(prefix)
        for key in reader.get_variable_to_shape_map():
            reader.get_tensor(key)
    except (tf.errors.OpError, ValueError, IndexError, OSError, RuntimeError) as error:
        text = str(error).strip().splitlines()
        return f'{type(error).__name__}: {text[0] if text else ""}'[:200]
    return None


def write_index(directory, kept):
    """Writes directory's index (`checkpoint`, the text TensorFlow's get_checkpoint_state
    reads) naming kept, oldest first, the last as the newest: to a temporary file, then renamed
    over the index, so a crash leaves the old index or the new one. Paths are relative to the
    directory, so a run directory can be moved."""
    names = [os.path.basename(prefix) for prefix in kept]
    text = ''.join([f'model_checkpoint_path: "{names[-1]}"\n'] +
                   [f'all_model_checkpoint_paths: "{name}"\n' for name in names])
    index = os.path.join(directory, 'checkpoint')
    file_writes.write_text(index + '.tmp', text)
    with file_writes.naming(index):
        os.replace(index + '.tmp', index)


def first_tried(directory, readable):
    """The candidates restore tried, in order, up to and including readable."""
    tried = candidates(directory, quiet=True)
    return tried[:tried.index(readable) + 1] if readable in tried else [readable]


def first_readable(directory, quiet=False):
    """The best checkpoint that reads back whole, warning (unless quiet) about each one skipped;
    None if the directory holds none; CheckpointError if it holds some and none can be read."""
    tried = candidates(directory, quiet)
    for prefix in tried:
        reason = verify(prefix)
        if reason is None:
            return prefix
        _warn(f'skipping damaged checkpoint {prefix} ({reason})', quiet)
    if tried:
        raise CheckpointError(f'no readable checkpoint in {directory} ({len(tried)} found, all '
                              f'damaged); nothing in the run directory was changed')
    return None


def steps_of(prefix):
    """The env steps a ckpt-N prefix is named for; -1 for another name."""
    found = _INDEX_FILE.match(os.path.basename(prefix) + '.index')
    return int(found.group(1)) if found else -1


class Checkpointer:
    """Saves named trackables as ckpt-<env steps>, keeps the newest max_to_keep, restores the
    newest readable one. milestone_every_steps > 0: of the checkpoints the rotation drops, the
    first in each span of that many steps stays on disk (a milestone), so a run keeps more
    than its last minutes; restores fall back to milestones as to any ckpt-N on disk."""

    def __init__(self, run_dir, max_to_keep=3, milestone_every_steps=0, **trackables):
        self.directory = os.path.join(run_dir, CHECKPOINT_DIR)
        self.checkpoint = tf.train.Checkpoint(**trackables)
        # Created now so that write() saves it too, as CheckpointManager.save() did: restores
        # of old and new checkpoints then match the same objects.
        self.checkpoint.save_counter  # pylint: disable=pointless-statement
        self.max_to_keep = max_to_keep
        self.milestone_every_steps = milestone_every_steps
        self._kept = None  # published prefixes, oldest first; read from the index on first use
        self._damaged = []  # skipped as damaged by restore(): removed by the next save

    def restore(self):
        """Restores the newest readable checkpoint; returns its prefix, or None if there is none.

        Raises CheckpointError if checkpoints exist but none is readable, or if the readable one
        holds another model (another game, network or paper).
        """
        prefix = first_readable(self.directory)
        if prefix is None:
            return None
        try:
            # Every object of this run restored; values it no longer holds (RMSProp's moment at
            # momentum 0, common/learners/optim.py) are left unread without a warning.
            self.checkpoint.restore(prefix).assert_existing_objects_matched().expect_partial()
        except (AssertionError, ValueError, tf.errors.OpError) as error:
            detail = str(error).strip().splitlines()[0][:200]
            raise CheckpointError(f'{prefix} does not fit this configuration ({detail})')
        # The rotation goes on from what is on disk, whatever the index said: older checkpoints
        # it did not list (after a missing index) are rotated out like listed ones, and the
        # damaged ones skipped above are removed once a newer checkpoint is saved.
        published = _published(self.directory) or []
        steps = steps_of(prefix)
        older = [path for path in on_disk(self.directory) if steps_of(path) < steps]
        listed = [path for path in published if path in older]
        self._kept = [path for path in reversed(older) if path not in listed] + listed + [prefix]
        self._damaged = [path for path in first_tried(self.directory, prefix)
                         if path != prefix]
        return prefix

    def save(self, env_steps):
        """Writes ckpt-<env_steps>, reads it back, then publishes it in the index and drops the
        oldest beyond max_to_keep; returns its prefix. CheckpointError (index unchanged) if
        writing or reading back fails."""
        os.makedirs(self.directory, exist_ok=True)
        prefix = os.path.join(self.directory, f'ckpt-{int(env_steps)}')
        if self._kept is None:
            self._kept = _published(self.directory) or []
        try:
            path = self.checkpoint.write(prefix)
        except (tf.errors.OpError, OSError) as error:
            remove_partial(prefix)
            cause = (errors.describe_tf_error(error) if isinstance(error, tf.errors.OpError)
                     else f'{error.filename}: {error.strerror}')
            raise CheckpointError(f'could not write checkpoint {prefix} ({cause}); its partial '
                                  f'files were removed; {self._still_newest()}')
        reason = verify(path)
        if reason is not None:
            remove_partial(prefix)
            raise CheckpointError(f'{path} did not read back ({reason}) and was removed; '
                                  f'{self._still_newest()}')
        kept = [old for old in self._kept if old != path] + [path]
        dropped, kept = kept[:-self.max_to_keep], kept[-self.max_to_keep:]
        write_index(self.directory, kept)
        self._kept = kept
        for damaged in self._damaged:
            if damaged != path:
                remove_partial(damaged)
                _warn(f'removed damaged checkpoint {damaged} (skipped at the restore; {path} '
                      'is saved)')
        self._damaged = []
        for old in dropped:
            if self._is_milestone(old, kept):
                continue
            for name in os.listdir(self.directory):
                if name == os.path.basename(old) + '.index' or name.startswith(
                        os.path.basename(old) + '.data-'):
                    os.remove(os.path.join(self.directory, name))
        return path

    def _is_milestone(self, prefix, kept):
        """True if prefix is the earliest checkpoint on disk, outside the rotation, in its span
        of milestone_every_steps (the first span, before any milestone is due, has none)."""
        every = self.milestone_every_steps
        span = steps_of(prefix) // every if every > 0 else 0
        if span < 1:
            return False
        others = [steps_of(other) for other in on_disk(self.directory)
                  if other != prefix and other not in kept]
        return not any(steps // every == span and steps < steps_of(prefix) for steps in others)

    def _still_newest(self):
        kept = [prefix for prefix in self._kept or [] if os.path.exists(prefix + '.index')]
        if kept:
            return f'the newest checkpoint is still {kept[-1]}'
        return 'the run has no earlier checkpoint'


POLICY_WEIGHTS = published_runs.POLICY_WEIGHTS


def policy_source(run_dir):
    """(prefix, published) of what holds run_dir's policy: its newest readable checkpoint, or
    else a published result's policy weights. CheckpointError naming run_dir if it has neither."""
    directory = os.path.join(run_dir, CHECKPOINT_DIR)
    prefix = first_readable(directory)
    if prefix is not None:
        return prefix, False
    weights = os.path.join(run_dir, POLICY_WEIGHTS)
    if os.path.isfile(weights + '.index'):
        return weights, True
    raise CheckpointError(
        f'{run_dir!r} has no checkpoint (in {directory}) and no published {POLICY_WEIGHTS}; '
        'allowed: a run directory that has saved a checkpoint, or a published result that '
        'carries its policy weights (docs/results.md)')


def output_path(run_dir, filename):
    """Where a tool (common.evaluate, common.watch) writes filename for run_dir: inside a run
    directory; for a published result, which is a record of its run and is not written to,
    in the current directory as NAME-filename. CheckpointError as policy_source's."""
    if not policy_source(run_dir)[1]:
        return os.path.join(run_dir, filename)
    name = os.path.basename(os.path.normpath(run_dir))
    return os.path.join(os.getcwd(), f'{name}-{filename}')


def write_policy_weights(directory, network, source):
    """Writes network's weights (no optimizer) and the counters of checkpoint prefix source as
    directory/POLICY_WEIGHTS, what restore_latest reads from a directory without checkpoints;
    returns the paths written. Written, then read back in full, as checkpoints are."""
    counters = Counters()
    reader = tf.train.load_checkpoint(source)
    for name in ('env_steps', 'episodes', 'elapsed_seconds'):
        key = f'counters/{name}/.ATTRIBUTES/VARIABLE_VALUE'
        if reader.has_tensor(key):
            getattr(counters, name).assign(reader.get_tensor(key))
    prefix = os.path.join(directory, POLICY_WEIGHTS)
    remove_partial(prefix)  # a previous publication's files
    checkpoint = tf.train.Checkpoint(policy=network, counters=counters)
    # Created now so that it is written: a restore creates it and asserts it matched.
    checkpoint.save_counter  # pylint: disable=pointless-statement
    path = checkpoint.write(prefix)
    reason = verify(path)
    if reason is not None:
        remove_partial(prefix)
        raise CheckpointError(f'{path} did not read back ({reason}) and was removed')
    return sorted(os.path.join(directory, name) for name in os.listdir(directory)
                  if name == POLICY_WEIGHTS + '.index'
                  or name.startswith(POLICY_WEIGHTS + '.data-'))


def restore_latest(run_dir, **trackables):
    """Restores the given trackables from run_dir's newest readable checkpoint; returns its env
    steps. For evaluation: only what is named is restored (the optimizer may be left out). A
    published result (no checkpoints, its POLICY_WEIGHTS) restores its one network, the one
    trackable given, whatever name the paper gives it."""
    prefix, published = policy_source(run_dir)
    counters = Counters()
    if not published:
        tf.train.Checkpoint(counters=counters, **trackables).restore(prefix).expect_partial()
        return int(counters.env_steps.numpy())
    if len(trackables) != 1:
        raise ValueError(f'a published policy restores one network, got {sorted(trackables)}')
    (network,) = trackables.values()
    try:
        tf.train.Checkpoint(policy=network, counters=counters).restore(
            prefix).assert_existing_objects_matched()
    except (AssertionError, ValueError, tf.errors.OpError) as error:
        detail = str(error).strip().splitlines()[0][:200]
        raise CheckpointError(f'{prefix} does not fit this configuration ({detail})')
    return int(counters.env_steps.numpy())


def trained_seconds(run_dir):
    """The training time (Counters.elapsed_seconds) saved in run_dir's newest readable
    checkpoint (or its published policy weights), the clock of metrics.csv's wall_time."""
    prefix, _ = policy_source(run_dir)
    reader = tf.train.load_checkpoint(prefix)
    return float(reader.get_tensor('counters/elapsed_seconds/.ATTRIBUTES/VARIABLE_VALUE'))
