"""common.run.scalars: Python numbers reach TensorFlow without adding to TF's per-value cache."""
import sys

import numpy as np
import tensorflow as tf

import common  # noqa: F401
from common.run import scalars


def test_uncached_is_a_zero_d_array_of_the_value():
    value = scalars.uncached(12345, np.int64)
    assert isinstance(value, np.ndarray) and value.shape == () and value.dtype == np.int64
    assert int(value) == 12345
    assert float(scalars.uncached(0.25, np.float64)) == 0.25


def test_assign_sets_the_value_and_memory_stays_flat_over_distinct_values():
    counter = tf.Variable(0, dtype=tf.int64)
    seconds = tf.Variable(0.0, dtype=tf.float64)
    for step in range(200):  # first calls allocate once (dispatch, shapes)
        scalars.assign(counter, step)
        scalars.assign(seconds, step * 0.5)
    blocks_before = sys.getallocatedblocks()
    for step in range(1_000, 6_000):
        scalars.assign(counter, step)
        scalars.assign(seconds, step * 0.37)
    grown = sys.getallocatedblocks() - blocks_before
    # A Python int or float per call would keep one cached tensor each: 10,000 blocks here.
    assert grown < 1_000, grown
    assert int(counter.numpy()) == 5_999
    assert seconds.numpy() == 5_999 * 0.37
