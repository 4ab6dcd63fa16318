"""Categorical DQN: the network's atoms and expected values, and its loss against tf-agents'
CategoricalDqnAgent on the same weights and batch (and by hand for the double-DQN choice)."""
import common  # noqa: F401
import numpy as np
import pytest
import tensorflow as tf
from tf_agents.agents.categorical_dqn import categorical_dqn_agent
from tf_agents.networks import network
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts

from common.learners import networks
from common.learners import q_learner

SUPPORT = np.linspace(-10.0, 10.0, 51).astype(np.float32)
SPEC = tf.TensorSpec((None, 4), tf.float32)


def _network(dueling=False, seed=0, support=SUPPORT):
    return networks.make_q_network(3, (4,), np.float32, network='mlp', dueling=dueling,
                                   torso_kwargs={'hidden_sizes': (8,)}, seed=seed,
                                   support=support)


@pytest.mark.parametrize('dueling', [False, True])
def test_the_network_gives_atom_logits_and_their_expected_values(dueling):
    model = _network(dueling)
    observations = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    logits = model.atom_logits(observations).numpy()
    assert logits.shape == (5, 3, 51)
    probabilities = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(model(observations).numpy(), (probabilities * SUPPORT).sum(-1),
                               rtol=1e-5, atol=1e-5)
    if dueling:  # per atom: V + A - mean_a A, so the logits' mean over actions is V's
        features = model.torso(observations)
        values = model.value_stream(features).numpy()
        np.testing.assert_allclose(logits.mean(axis=1), values, rtol=1e-5, atol=1e-5)


class _KerasCategoricalNetwork(network.Network):
    """Our categorical Q model behind tf-agents' Network interface (logits [B, A, K])."""

    def __init__(self, model, observation_spec):
        super().__init__(input_tensor_spec=observation_spec, state_spec=(), name='keras_c51')
        self._model = model

    @property
    def num_atoms(self):
        return self._model.num_atoms

    def call(self, observation, step_type=None, network_state=(), training=False):
        return self._model.atom_logits(observation), network_state


def _batch(size=16, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(size, 4)).astype(np.float32), rng.integers(0, 3, size).astype(np.int32),
            (rng.normal(size=size) * 3).astype(np.float32),
            rng.normal(size=(size, 4)).astype(np.float32),
            (rng.random(size) < 0.3).astype(np.float32))


def _learner(double_dqn=False, n_step=1, priority='kl'):
    make = lambda: _network(seed=1)  # noqa: E731
    learner = q_learner.QLearner(
        make, 3, q_learner.centered_rmsprop(1e-3, 0.95, 0.01),
        q_learner.QSettings(gamma=0.97, double_dqn=double_dqn, categorical=True,
                            n_step=n_step, categorical_priority=priority), SPEC)
    # Online and target differ, as they do between target copies.
    for variable in learner.online.trainable_variables:
        variable.assign_add(tf.random.stateless_normal(variable.shape, seed=[1, 2]) * 0.3)
    return learner


def test_the_loss_matches_tf_agents_categorical_dqn_agent(tf_agents_transitions):
    learner = _learner()
    observations, actions, rewards, next_observations, terminals = _batch()
    ours = learner.loss(observations, actions, rewards, next_observations, terminals)
    observation_spec = tf.TensorSpec((4,), tf.float32)
    agent = categorical_dqn_agent.CategoricalDqnAgent(
        ts.time_step_spec(observation_spec), tensor_spec.BoundedTensorSpec((), tf.int32, 0, 2),
        categorical_q_network=_KerasCategoricalNetwork(learner.online, observation_spec),
        target_categorical_q_network=_KerasCategoricalNetwork(learner.target,
                                                              observation_spec),
        optimizer=tf.compat.v1.train.GradientDescentOptimizer(0.0), min_q_value=-10.0,
        max_q_value=10.0, gamma=0.97)
    experience = tf_agents_transitions(observations, actions, rewards, next_observations,
                                       terminals)
    oracle = agent._loss(experience, gamma=0.97)  # pylint: disable=protected-access
    np.testing.assert_allclose(ours.loss.numpy(), oracle.loss.numpy(), rtol=1e-5)


def test_double_dqn_takes_the_next_action_from_the_online_network_by_hand():
    learner = _learner(double_dqn=True, n_step=2)
    observations, actions, rewards, next_observations, terminals = _batch(seed=1)
    ours = learner.loss(observations, actions, rewards, next_observations, terminals)
    next_actions = learner.online(next_observations).numpy().argmax(axis=1)
    next_logits = learner.target.atom_logits(next_observations).numpy()
    next_probs = np.exp(next_logits) / np.exp(next_logits).sum(-1, keepdims=True)
    chosen_next = next_probs[np.arange(16), next_actions]
    # Bellemare et al. (2017) eq. 7 by hand: each shifted atom split between its neighbours.
    shifted = np.clip(rewards[:, None] + 0.97 ** 2 * (1 - terminals[:, None]) * SUPPORT,
                      -10, 10)
    position = (shifted + 10) / 0.4
    lower, upper = np.floor(position).astype(int), np.ceil(position).astype(int)
    targets = np.zeros((16, 51))
    for row in range(16):
        for atom in range(51):
            if lower[row, atom] == upper[row, atom]:
                targets[row, lower[row, atom]] += chosen_next[row, atom]
            else:
                targets[row, lower[row, atom]] += chosen_next[row, atom] * (
                    upper[row, atom] - position[row, atom])
                targets[row, upper[row, atom]] += chosen_next[row, atom] * (
                    position[row, atom] - lower[row, atom])
    logits = learner.online.atom_logits(observations).numpy()[np.arange(16), actions]
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    cross_entropies = -(targets * log_probs).sum(-1)
    # The priorities: KL(target || prediction) by default (Hessel et al. 2018, accel_rl), the
    # cross-entropy less the target's entropy (0 log 0 = 0); or the cross-entropy itself.
    target_entropies = -np.where(targets > 0, targets * np.log(np.maximum(targets, 1e-30)),
                                 0.0).sum(-1)
    assert target_entropies.max() > 1.0  # so the two kinds differ here
    np.testing.assert_allclose(ours.td_errors.numpy(), cross_entropies - target_entropies,
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours.loss.numpy(), cross_entropies.mean(), rtol=1e-4)
    by_cross_entropy = _learner(double_dqn=True, n_step=2, priority='cross_entropy')
    for mine, theirs in zip(by_cross_entropy.online.variables + by_cross_entropy.target.variables,
                            learner.online.variables + learner.target.variables):
        mine.assign(theirs)
    plain = by_cross_entropy.loss(observations, actions, rewards, next_observations, terminals)
    np.testing.assert_allclose(plain.td_errors.numpy(), cross_entropies, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(plain.loss.numpy(), ours.loss.numpy(), rtol=1e-6)
    # The logged value estimate: the mean over the batch of max_a sum_k p_k(s, a) z_k.
    all_logits = learner.online.atom_logits(observations).numpy()
    all_probs = np.exp(all_logits) / np.exp(all_logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(ours.mean_max_q.numpy(),
                               (all_probs * SUPPORT).sum(-1).max(-1).mean(), rtol=1e-4)


def test_a_weighted_categorical_loss_weights_each_cross_entropy():
    learner = _learner(priority='cross_entropy')
    batch = _batch(seed=2)
    weights = np.linspace(0.0, 1.0, 16).astype(np.float32)
    plain = learner.loss(*batch)
    weighted = learner.loss(*batch, weights=weights)
    np.testing.assert_allclose(weighted.loss.numpy(),
                               (plain.td_errors.numpy() * weights).mean(), rtol=1e-5)


def test_an_unknown_categorical_priority_is_named():
    with pytest.raises(ValueError, match="categorical_priority='l2'; allowed: kl, cross_entropy"):
        _learner(priority='l2')


def test_a_categorical_setting_needs_a_network_with_a_support():
    with pytest.raises(ValueError, match='categorical=True needs a network with a support'):
        q_learner.QLearner(lambda: _network(support=None), 3,
                           q_learner.centered_rmsprop(1e-3, 0.95, 0.01),
                           q_learner.QSettings(gamma=0.9, categorical=True), SPEC)
