"""Replay feeds: the tf.data pipeline yields the draws a direct feed makes from the same replay
(shapes, dtypes, values; prioritized with indices and weights), and a bad name is refused."""
import common  # noqa: F401
import numpy as np
import pytest
import tensorflow as tf

from common.replay import prioritized_replay
from common.replay import replay as replay_lib
from common.replay import replay_feed


def _replay(prioritized, seed=1):
    """3 streams of 150 random steps (4-frame stacks, 3-step returns), prioritized or not."""
    rng = np.random.default_rng(0)
    replay = replay_lib.ReplayMemory(600, (6, 5, 4), np.uint8, stack=4, num_streams=3,
                                     seed=seed, n_step=3, gamma=0.9)
    if prioritized:
        replay = prioritized_replay.PrioritizedReplay(replay, 0.6, seed=seed)
    for stream in range(3):
        replay.add_steps(stream, rng.integers(0, 255, (150, 6, 5), dtype=np.uint8),
                         rng.integers(0, 4, 150).astype(np.int32),
                         rng.normal(size=150).astype(np.float32), rng.random(150) < 0.05,
                         rng.random(150) < 0.05)
    return replay


def test_the_tf_data_feed_yields_the_direct_feeds_stacks():
    direct = replay_feed.make_feed('direct', _replay(False), num_minibatches=3, batch_size=8)
    piped = replay_feed.make_feed('tf_data', _replay(False), num_minibatches=3, batch_size=8)
    for _ in range(3):
        expected, got = direct.draw(), piped.draw()
        assert [tuple(field.shape) for field in got] == [
            (3, 8, 6, 5, 4), (3, 8), (3, 8), (3, 8, 6, 5, 4), (3, 8)]
        assert [field.dtype for field in got] == [tf.uint8, tf.int32, tf.float32, tf.uint8,
                                                  tf.float32]
        for want, have in zip(expected, got):
            np.testing.assert_array_equal(have.numpy(), want)
    piped.close()


def test_the_tf_data_feed_yields_prioritized_draws_with_indices_and_weights():
    direct = replay_feed.make_feed('direct', _replay(True), num_minibatches=1, batch_size=8)
    piped = replay_feed.make_feed('tf_data', _replay(True), num_minibatches=1, batch_size=8)
    direct.beta = piped.beta = 0.5
    # The pipeline's first draw is made before any update, as is the direct feed's.
    (expected, want_indices, want_weights), (got, indices, weights) = direct.draw(), piped.draw()
    np.testing.assert_array_equal(indices, want_indices)
    np.testing.assert_allclose(weights.numpy(), want_weights)
    for want, have in zip(expected, got):
        np.testing.assert_array_equal(have.numpy(), want)
    piped.update_priorities(indices, np.full(8, 5.0, np.float32))
    piped.close()


def test_an_unknown_replay_input_is_named():
    with pytest.raises(ValueError, match="replay_input='queue'; allowed: direct, tf_data"):
        replay_feed.make_feed('queue', _replay(False), 1, 8)
