"""Checkpoints of a run: model, optimizer and counters in run_dir/checkpoints, resumed on rerun."""
import os

import tensorflow as tf


class Counters(tf.Module):
    """Run counters that must survive a restart: env steps, episodes, elapsed wall time."""

    def __init__(self):
        super().__init__(name='counters')
        self.env_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name='env_steps')
        self.episodes = tf.Variable(0, dtype=tf.int64, trainable=False, name='episodes')
        self.elapsed_seconds = tf.Variable(0.0, dtype=tf.float64, trainable=False,
                                           name='elapsed_seconds')


class Checkpointer:
    """tf.train.CheckpointManager over named trackables; restore() resumes the latest save."""

    def __init__(self, run_dir, max_to_keep=3, **trackables):
        self.directory = os.path.join(run_dir, 'checkpoints')
        self.checkpoint = tf.train.Checkpoint(**trackables)
        self.manager = tf.train.CheckpointManager(self.checkpoint, self.directory,
                                                  max_to_keep=max_to_keep)

    def restore(self):
        """Restores the latest checkpoint if there is one; returns its path or None."""
        latest = self.manager.latest_checkpoint
        if latest:
            self.checkpoint.restore(latest).assert_existing_objects_matched()
        return latest

    def save(self, env_steps):
        return self.manager.save(checkpoint_number=int(env_steps))


def restore_latest(run_dir, **trackables):
    """Restores the given trackables from run_dir's latest checkpoint; returns its env steps.

    For evaluation: only what is named is restored (the optimizer may be left out).
    """
    counters = Counters()
    checkpoint = tf.train.Checkpoint(counters=counters, **trackables)
    latest = tf.train.latest_checkpoint(os.path.join(run_dir, 'checkpoints'))
    if latest is None:
        raise FileNotFoundError(f'no checkpoint in {os.path.join(run_dir, "checkpoints")}')
    checkpoint.restore(latest).expect_partial()
    return int(counters.env_steps.numpy())
