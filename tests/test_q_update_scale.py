"""One Q-learner update at Atari scale against the optimizer each preset cites.

The fast DQN Pong run at 1.32M steps was flat with its loss pinned at the no-reward level: its
RMSProp put the epsilon of Mnih et al.'s summed loss (0.01) inside the square root of the
gradient of a loss averaged over the batch, a denominator of at least 0.1 where per-weight
gradients are 1e-4 to 1e-3, steps ~10x smaller than the authors' code takes. These tests apply
one update from each preset to the same frames and compare the weights with the cited rule.
"""
import os

import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf
import tf_keras

from accel_tf import learners
from accel_tf import main as accel_main
from common.launch import app
from dqn_tf import dqn
from dqn_tf import main as dqn_main


def _batch(shape, num_actions, size=32, seed=0):
    """Frames as Pong gives them (uint8), sign-clipped rewards and a few terminals."""
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (size,) + shape, dtype=np.uint8),
            rng.integers(0, num_actions, size).astype(np.int32),
            rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0], size).astype(np.float32),
            rng.integers(0, 256, (size,) + shape, dtype=np.uint8),
            (rng.random(size) < 0.1).astype(np.float32))


def _mean_loss_gradients(learner, batch):
    """The gradient of the learner's own loss (a mean over the batch; its values are tested
    against tf-agents and by hand in test_q_learner.py and test_dqn.py)."""
    variables = learner.online.trainable_variables
    with tf.GradientTape() as tape:
        loss = learner.loss(*batch).loss
    return [gradient.numpy() for gradient in tape.gradient(loss, variables)]


def _preset(configure, gin_file):
    return configure([os.path.join(app.PROJECT_ROOT, gin_file)], [])


def test_fast_dqn_updates_as_the_authors_keras_rmsprop_does():
    """brett-daley/fast-dqn: RMSprop(lr=2.5e-4, rho=0.95, epsilon=0.01, centered=True) of
    TF 2.1 Keras (the same legacy optimizer tf_keras ships) on the batch-mean Huber loss."""
    config = _preset(dqn_main.configure, 'gin/dqn/pong.gin')
    learner = dqn.build_learner(config)
    batch = _batch(tuple(config.env_config.observation_shape), learner.num_actions)
    before = [variable.numpy() for variable in learner.online.trainable_variables]
    gradients = _mean_loss_gradients(learner, batch)

    oracle_variables = [tf.Variable(weights) for weights in before]
    keras_rmsprop = tf_keras.optimizers.legacy.RMSprop(
        learning_rate=2.5e-4, rho=0.95, epsilon=0.01, centered=True)
    keras_rmsprop.apply_gradients(zip([tf.constant(g) for g in gradients], oracle_variables))

    learner.train_step(*batch)
    moved = 0.0
    for variable, oracle, gradient, start in zip(learner.online.trainable_variables,
                                                 oracle_variables, gradients, before):
        np.testing.assert_allclose(variable.numpy(), oracle.numpy(), rtol=1e-5, atol=1e-8)
        # By hand: ms = 0.05 g^2, mg = 0.05 g, step = lr g / (sqrt(ms - mg^2) + 0.01).
        by_hand = start - 2.5e-4 * gradient / (
            np.sqrt(0.05 * gradient ** 2 - (0.05 * gradient) ** 2) + 0.01)
        np.testing.assert_allclose(variable.numpy(), by_hand, rtol=1e-5, atol=1e-8)
        moved = max(moved, float(np.max(np.abs(variable.numpy() - start))))
    assert moved > 1e-5  # the update is not floor-bound to nothing


@pytest.mark.parametrize('gin_file, batch_size', [
    ('gin/accel/dqn_pong.gin', 32), ('gin/accel/dqn_512_pong.gin', 512)])
def test_accelerated_dqn_updates_as_nature_dqns_rmsprop_on_the_summed_loss(gin_file, batch_size):
    """Stooke & Abbeel's DQN keeps "the original publication's" values (App. A.3): DeepMind's
    NeuralQLearner.lua, whose gradient dw is summed over the minibatch: g = 0.95 g + 0.05 dw,
    g2 = 0.95 g2 + 0.05 dw^2, w += lr dw / sqrt(g2 - g^2 + 0.01), from g = g2 = 0."""
    config = _preset(accel_main.configure, gin_file)
    learner = learners.build_q_learner(config)
    # A stand-in batch of at most 64 keeps the test small: its mean gradient is taken as the
    # preset's batch's, whose summed gradient is then batch_size times it.
    size = min(batch_size, 64)
    batch = _batch(tuple(config.env_config.observation_shape), learner.num_actions, size)
    before = [variable.numpy() for variable in learner.online.trainable_variables]
    mean_gradients = _mean_loss_gradients(learner, batch)
    learner.train_step(*batch)
    for variable, gradient, start in zip(learner.online.trainable_variables, mean_gradients,
                                         before):
        summed = gradient * batch_size
        mean_square, mean = 0.05 * summed ** 2, 0.05 * summed
        by_hand = start - config.learning_rate * summed / np.sqrt(mean_square - mean ** 2 + 0.01)
        np.testing.assert_allclose(variable.numpy(), by_hand, rtol=2e-4, atol=1e-8)
