"""Means of a learner's per-update statistics over a log interval, kept inside its tf.function.

A metrics row that shows the last update's loss or gradient norm is one noisy sample out of
hundreds; summing into variables in the train step costs a few scalar ops and no host sync.
"""
import tensorflow as tf


class IntervalMeans(tf.Module):
    """Running sums of named scalars, added to once per update and read out (and reset) once
    per log interval.

    The sums and the update count live in one vector variable, changed by one assign_add per
    update and taken by subtracting what was read: GA3C's trainer threads add while the main
    loop takes, and with separate variables an update landing between the reads of the count
    and the sums skewed the interval's means (an entropy above ln |A| was logged)."""

    def __init__(self, names, name='interval_means'):
        super().__init__(name=name)
        self.names = tuple(names)
        # MEAN: under a tf.distribute strategy each replica adds its own statistics, and the
        # sums take their mean over the replicas.
        self._totals = tf.Variable(tf.zeros(len(self.names) + 1, tf.float64), trainable=False,
                                   name='sums_and_count',
                                   aggregation=tf.VariableAggregation.MEAN)

    def add(self, stats):
        """Adds one update's statistics (a dict holding at least self.names); graph-safe."""
        values = [tf.cast(stats[stat], tf.float64) for stat in self.names]
        self._totals.assign_add(tf.stack(values + [tf.constant(1.0, tf.float64)]))

    def take(self):
        """{name: mean since the last take()} as Python floats (None with no update, NaN if an
        update's was); resets. An update that lands while this runs stays for the next
        interval, whole."""
        totals = self._totals.read_value()
        self._totals.assign_sub(totals)
        totals = totals.numpy()
        count = totals[-1]
        return {stat: (float(total) / count if count else None)
                for stat, total in zip(self.names, totals[:-1])}
