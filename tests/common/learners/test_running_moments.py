"""RunningMoments against numpy: the moments of everything seen (with the prior of one sample at
mean 0, variance 1), and standardization both ways with rl_games' clip and epsilon."""
import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf

from common.learners import running_moments


def test_moments_are_those_of_every_batch_pooled_with_the_prior():
    rng = np.random.default_rng(0)
    moments = running_moments.RunningMoments()
    batches = [rng.normal(3.0, 2.0, size=size) for size in (5, 17, 64)]
    # Pooled by hand: the prior's sum of squares is 1 x 1 at mean 0.
    count, mean, squares = 1.0, 0.0, 1.0
    for batch in batches:
        moments.update(tf.constant(batch.astype(np.float32).reshape(-1, 1)))
        batch_mean, batch_count = batch.mean(), batch.size
        batch_squares = batch.var(ddof=1) * batch_count
        total = count + batch_count
        squares += batch_squares + (batch_mean - mean) ** 2 * count * batch_count / total
        mean += (batch_mean - mean) * batch_count / total
        count = total
        assert float(moments.mean.numpy()) == pytest.approx(mean, rel=1e-5)
        assert float(moments.variance.numpy()) == pytest.approx(squares / count, rel=1e-5)
    assert float(moments.count.numpy()) == 1 + 5 + 17 + 64
    # Many batches: the moments of the data (the prior's weight fades).
    everything = np.concatenate(batches)
    assert float(moments.mean.numpy()) == pytest.approx(everything.mean(), abs=0.05)
    assert float(moments.variance.numpy()) == pytest.approx(everything.var(), rel=0.1)


def test_standardize_and_back_with_rl_games_clip_and_epsilon():
    moments = running_moments.RunningMoments()
    moments.update(tf.constant([1.0, 3.0, 5.0, 7.0]))
    mean, variance = float(moments.mean.numpy()), float(moments.variance.numpy())
    scale = np.sqrt(variance + 1e-5)
    values = np.array([mean, mean + scale, mean - 2 * scale, mean + 9 * scale], np.float32)
    standardized = moments.standardize(tf.constant(values)).numpy()
    np.testing.assert_allclose(standardized, [0.0, 1.0, -2.0, 5.0], atol=1e-5)  # 9 -> 5
    back = moments.unstandardize(tf.constant([0.0, 1.0, -7.0], tf.float32)).numpy()
    np.testing.assert_allclose(back, [mean, mean + scale, mean - 5 * scale], rtol=1e-5)


def test_moments_element_by_element_for_a_sample_shape():
    rng = np.random.default_rng(1)
    moments = running_moments.RunningMoments((2, 3))
    batch = rng.normal(size=(10, 2, 3)) * np.arange(1, 7).reshape(2, 3)
    moments.update(tf.constant(batch, tf.float32))
    np.testing.assert_allclose(moments.mean.numpy(), batch.sum(0) / 11, rtol=1e-5)
    squares = 1.0 + batch.var(0, ddof=1) * 10 + batch.mean(0) ** 2 * 10 / 11
    np.testing.assert_allclose(moments.variance.numpy(), squares / 11, rtol=1e-5)
    assert float(moments.count.numpy()) == 11
