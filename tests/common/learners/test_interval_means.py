"""IntervalMeans: per-update statistics averaged over a log interval, inside a tf.function."""
import math

import common  # noqa: F401
import numpy as np
import pytest
import tensorflow as tf

from common.learners import interval_means


def test_take_returns_the_mean_since_the_last_take_and_resets():
    means = interval_means.IntervalMeans(('loss', 'grad_norm'))
    add = tf.function(means.add)
    for loss, norm in ((1.0, 4.0), (2.0, 5.0), (6.0, 9.0)):
        add({'loss': tf.constant(loss), 'grad_norm': tf.constant(norm), 'ignored': 0.0})
    assert means.take() == pytest.approx({'loss': 3.0, 'grad_norm': 6.0})
    add({'loss': tf.constant(-1.0), 'grad_norm': tf.constant(1.0)})
    assert means.take() == pytest.approx({'loss': -1.0, 'grad_norm': 1.0})


def test_an_interval_without_updates_gives_none_and_a_nan_update_gives_nan():
    """None: absent (an empty cell in metrics.csv); NaN: what a diverged update gave."""
    means = interval_means.IntervalMeans(('loss',))
    assert means.take()['loss'] is None
    means.add({'loss': tf.constant(1.0)})
    means.add({'loss': tf.constant(math.nan)})
    assert math.isnan(means.take()['loss'])


def test_many_small_values_keep_their_precision():
    """float64 sums: a thousand updates of 1e-3 next to one of 1e3 still average right."""
    means = interval_means.IntervalMeans(('grad_norm',))
    means.add({'grad_norm': tf.constant(1e3)})
    for _ in range(1000):
        means.add({'grad_norm': tf.constant(1e-3, tf.float32)})
    expected = (1e3 + 1000 * np.float32(1e-3)) / 1001
    assert means.take()['grad_norm'] == pytest.approx(expected, rel=1e-9)


def test_takes_while_threads_add_see_whole_updates_only():
    """GA3C's trainer threads add while the main loop takes: every interval's mean of a
    constant is that constant, and no update is lost or counted twice."""
    import threading
    means = interval_means.IntervalMeans(('entropy', 'loss'))
    add = tf.function(means.add)
    adds_per_thread = 300
    stats = {'entropy': tf.constant(1.5), 'loss': tf.constant(-2.0)}

    def trainer():
        for _ in range(adds_per_thread):
            add(stats)

    add(stats)  # traced once, before the threads start
    threads = [threading.Thread(target=trainer) for _ in range(3)]
    for thread in threads:
        thread.start()
    taken = []
    while any(thread.is_alive() for thread in threads):
        taken.append(means.take())
    for thread in threads:
        thread.join()
    taken.append(means.take())
    for interval in taken:
        if interval['entropy'] is not None:
            assert interval == pytest.approx({'entropy': 1.5, 'loss': -2.0}, rel=1e-12)
    assert means._totals.numpy().tolist() == [0.0, 0.0, 0.0]  # all taken, nothing left over
