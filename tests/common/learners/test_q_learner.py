"""The shared Q-learner: TD errors per sample, K updates in one call equal K calls."""
import common  # noqa: F401
import numpy as np
import pytest
import tensorflow as tf

from common.learners import networks
from common.learners import q_learner

SPEC = tf.TensorSpec((None, 4), tf.float32)


def _learner(double_dqn=False, **settings):
    tf.random.set_seed(0)
    support = np.linspace(-2.0, 2.0, 5).astype(np.float32) if settings.get('categorical') else None
    make = lambda: networks.make_q_network(  # noqa: E731
        3, (4,), np.float32, network='mlp', torso_kwargs={'hidden_sizes': (8,)},
        support=support)
    return q_learner.QLearner(make, 3, q_learner.centered_rmsprop(1e-3, 0.95, 0.01),
                              q_learner.QSettings(gamma=0.9, double_dqn=double_dqn, **settings),
                              SPEC)


def _batch(seed, size=6):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(size, 4)).astype(np.float32),
            rng.integers(0, 3, size).astype(np.int32), rng.normal(size=size).astype(np.float32),
            rng.normal(size=(size, 4)).astype(np.float32), np.float32(rng.random(size) < 0.3))


def test_an_update_returns_the_td_errors_against_the_target_network():
    for double_dqn in (False, True):
        learner = _learner(double_dqn)
        for variable in learner.target.trainable_variables:  # target != online
            variable.assign(variable * 0.5)
        observations, actions, rewards, next_observations, terminals = _batch(1)
        next_target = learner.target(next_observations).numpy()
        chosen = (np.argmax(learner.online(next_observations).numpy(), axis=1) if double_dqn
                  else np.argmax(next_target, axis=1))
        targets = rewards + 0.9 * (1 - terminals) * next_target[np.arange(6), chosen]
        all_q = learner.online(observations).numpy()
        q_values = all_q[np.arange(6), actions]
        variables = learner.online.trainable_variables
        with tf.GradientTape() as tape:
            loss = learner.loss(observations, actions, rewards, next_observations, terminals)
        norm = np.sqrt(sum(np.sum(g.numpy() ** 2)
                           for g in tape.gradient(loss.loss, variables)))
        td_errors = learner.train_step(observations, actions, rewards, next_observations,
                                       terminals)
        np.testing.assert_allclose(td_errors, targets - q_values, rtol=1e-5, atol=1e-6)
        huber = np.where(np.abs(targets - q_values) <= 1, 0.5 * (targets - q_values) ** 2,
                         np.abs(targets - q_values) - 0.5)
        means = learner.update_means.take()
        np.testing.assert_allclose(means['loss'], huber.mean(), rtol=1e-5)
        # The logged value estimate and gradient norm: mean max_a Q(s, a), global norm.
        np.testing.assert_allclose(means['mean_max_q'], all_q.max(axis=1).mean(), rtol=1e-5)
        np.testing.assert_allclose(means['grad_norm'], norm, rtol=1e-5)


@pytest.mark.parametrize('settings', [{}, {'double_dqn': True}, {'categorical': True}])
def test_a_stack_of_updates_in_one_call_equals_one_call_each(settings):
    """The graph loop over a stack makes the updates K calls make, for plain, double and
    categorical DQN."""
    batches = [_batch(seed) for seed in range(3)]
    looped, single = _learner(**settings), _learner(**settings)
    single.online.set_weights(looped.online.get_weights())
    single.update_target()
    looped.update_target()
    stacked = [np.stack(field) for field in zip(*batches)]
    td_stack = looped.train_steps(*stacked).numpy()
    td_each = np.stack([single.train_step(*batch).numpy() for batch in batches])
    np.testing.assert_allclose(td_stack, td_each, rtol=1e-5, atol=1e-6)
    for first, second in zip(looped.online.get_weights(), single.online.get_weights()):
        np.testing.assert_allclose(first, second, rtol=1e-5, atol=1e-7)
    assert td_stack.shape == (3, 6)


def test_n_step_updates_bootstrap_with_gamma_to_the_n():
    learner = _learner(n_step=3)
    observations, actions, rewards, next_observations, terminals = _batch(2)
    next_target = learner.target(next_observations).numpy().max(axis=1)
    q_values = learner.online(observations).numpy()[np.arange(6), actions]
    td_errors = learner.train_step(observations, actions, rewards, next_observations, terminals)
    targets = rewards + 0.9 ** 3 * (1 - terminals) * next_target
    np.testing.assert_allclose(td_errors, targets - q_values, rtol=1e-5, atol=1e-6)


def test_weighted_updates_equal_updates_on_the_weighted_loss():
    weighted, by_hand = _learner(importance_weighted=True), _learner()
    by_hand.online.set_weights(weighted.online.get_weights())
    by_hand.update_target()
    weighted.update_target()
    batch = _batch(3)
    weights = np.array([1.0, 0.5, 0.25, 1.0, 0.0, 0.75], np.float32)
    weighted.weighted_train_step(*batch, weights)
    # The same step by hand: the gradient of mean(w * Huber) through the unweighted learner's
    # optimizer.
    variables = by_hand.online.trainable_variables
    with tf.GradientTape() as tape:
        loss = by_hand.loss(*batch, weights=weights)
    by_hand.optimizer.apply_gradients(tape.gradient(loss.loss, variables), variables)
    for first, second in zip(weighted.online.get_weights(), by_hand.online.get_weights()):
        np.testing.assert_allclose(first, second, rtol=1e-5, atol=1e-7)
    unweighted = _learner()
    unweighted.train_step(*batch)
    assert not all(np.allclose(first, second) for first, second in
                   zip(weighted.online.get_weights(), unweighted.online.get_weights()))


class _SGD:
    """Steps every variable by minus its gradient (rate 1), in common.learners.optim's interface."""

    def build(self, variables):
        del variables

    def apply_gradients(self, gradients, variables):
        for gradient, variable in zip(gradients, variables):
            variable.assign_sub(gradient)


def test_clip_norm_scales_the_step_to_that_global_norm_along_the_gradient():
    """Plain SGD at rate 1: the step is the (clipped) gradient, so its global norm is clip_norm
    when the gradient's is larger, and it points along the gradient; unclipped otherwise."""
    tf.random.set_seed(0)
    make = lambda: networks.make_q_network(  # noqa: E731
        3, (4,), np.float32, network='mlp', torso_kwargs={'hidden_sizes': (8,)})
    batch = _batch(4)
    gradient = None
    for clip_norm in (0.0, 1e-3, 1e6):
        learner = q_learner.QLearner(make, 3, _SGD(),
                                     q_learner.QSettings(gamma=0.9, clip_norm=clip_norm), SPEC)
        if gradient is None:
            weights = learner.online.get_weights()
            variables = learner.online.trainable_variables
            with tf.GradientTape() as tape:
                loss = learner.loss(*batch)
            gradient = np.concatenate([g.numpy().ravel()
                                       for g in tape.gradient(loss.loss, variables)])
        learner.online.set_weights(weights)
        learner.update_target()
        learner.train_step(*batch)
        step = np.concatenate([(before - after).ravel() for before, after in
                               zip(weights, learner.online.get_weights())])
        norm = np.linalg.norm(gradient)
        assert norm > 1e-3  # so 1e-3 clips
        expected = gradient * (min(1.0, clip_norm / norm) if clip_norm else 1.0)
        np.testing.assert_allclose(step, expected, rtol=1e-3, atol=1e-7)  # float32 weights
