"""Replay memory: uniform and prioritized (sum tree), and its tf.data feed."""
