"""Means of a learner's per-update statistics over a log interval, kept inside its tf.function.

A metrics row that shows the last update's loss or gradient norm is one noisy sample out of
hundreds; summing into variables in the train step costs a few scalar ops and no host sync.
"""
import math

import tensorflow as tf


class IntervalMeans(tf.Module):
    """Running sums of named scalars, added to once per update and read out (and reset) once
    per log interval."""

    def __init__(self, names, name='interval_means'):
        super().__init__(name=name)
        self.names = tuple(names)
        self._sums = {stat: tf.Variable(0.0, dtype=tf.float64, trainable=False, name=f'sum_{stat}')
                      for stat in self.names}
        self._count = tf.Variable(0, dtype=tf.int64, trainable=False, name='count')

    def add(self, stats):
        """Adds one update's statistics (a dict holding at least self.names); graph-safe."""
        for stat in self.names:
            self._sums[stat].assign_add(tf.cast(stats[stat], tf.float64))
        self._count.assign_add(1)

    def take(self):
        """{name: mean since the last take()} as Python floats (NaN with no update); resets."""
        count = int(self._count.numpy())
        means = {stat: (float(total.numpy()) / count if count else math.nan)
                 for stat, total in self._sums.items()}
        for total in self._sums.values():
            total.assign(0.0)
        self._count.assign(0)
        return means
