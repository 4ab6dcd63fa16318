"""IntervalMeans: per-update statistics averaged over a log interval, inside a tf.function."""
import math

import common  # noqa: F401
import numpy as np
import pytest
import tensorflow as tf

from common import interval_means


def test_take_returns_the_mean_since_the_last_take_and_resets():
    means = interval_means.IntervalMeans(('loss', 'grad_norm'))
    add = tf.function(means.add)
    for loss, norm in ((1.0, 4.0), (2.0, 5.0), (6.0, 9.0)):
        add({'loss': tf.constant(loss), 'grad_norm': tf.constant(norm), 'ignored': 0.0})
    assert means.take() == pytest.approx({'loss': 3.0, 'grad_norm': 6.0})
    add({'loss': tf.constant(-1.0), 'grad_norm': tf.constant(1.0)})
    assert means.take() == pytest.approx({'loss': -1.0, 'grad_norm': 1.0})


def test_an_interval_without_updates_gives_nan():
    means = interval_means.IntervalMeans(('loss',))
    assert math.isnan(means.take()['loss'])


def test_many_small_values_keep_their_precision():
    """float64 sums: a thousand updates of 1e-3 next to one of 1e3 still average right."""
    means = interval_means.IntervalMeans(('grad_norm',))
    means.add({'grad_norm': tf.constant(1e3)})
    for _ in range(1000):
        means.add({'grad_norm': tf.constant(1e-3, tf.float32)})
    expected = (1e3 + 1000 * np.float32(1e-3)) / 1001
    assert means.take()['grad_norm'] == pytest.approx(expected, rel=1e-9)
