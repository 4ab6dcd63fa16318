"""Returns, advantages and losses against hand-computed values and tf-agents' implementations."""
import common  # noqa: F401  (selects legacy Keras before TensorFlow loads)

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_probability as tfp
from tf_agents.agents.categorical_dqn.categorical_dqn_agent import project_distribution
from tf_agents.agents.ppo import ppo_clip_agent
from tf_agents.networks import actor_distribution_network
from tf_agents.networks import value_network
from tf_agents.specs import tensor_spec
from tf_agents.trajectories import time_step as ts
from tf_agents.utils import value_ops

from common.learners import losses


def random_rollout(seed, num_steps=5, batch=4):
    """Rewards, values, terminals [T, N] and bootstrap values [N], float32."""
    rng = np.random.default_rng(seed)
    rewards = rng.normal(size=(num_steps, batch)).astype(np.float32)
    values = rng.normal(size=(num_steps, batch)).astype(np.float32)
    terminals = (rng.random((num_steps, batch)) < 0.3).astype(np.float32)
    bootstrap = rng.normal(size=batch).astype(np.float32)
    return rewards, values, terminals, bootstrap


def test_n_step_returns_hand_computed():
    rewards = [[1., 0.], [0., 1.], [2., 0.]]
    terminals = [[0., 0.], [1., 0.], [0., 0.]]
    bootstrap = [10., -1.]
    # Column 0: R2 = 2 + .9*10 = 11; the episode ends at t=1, so R1 = 0 and R0 = 1 + .9*0 = 1.
    # Column 1: R2 = .9*-1 = -.9; R1 = 1 + .9*-.9 = .19; R0 = .9*.19 = .171.
    expected = [[1., 0.171], [0., 0.19], [11., -0.9]]
    returns = losses.n_step_returns(tf.constant(rewards), tf.constant(terminals),
                                    tf.constant(bootstrap), 0.9)
    np.testing.assert_allclose(returns, expected, rtol=1e-6)


def test_n_step_returns_matches_tf_agents():
    rewards, _, terminals, bootstrap = random_rollout(0)
    gamma = 0.99
    expected = value_ops.discounted_return(rewards, gamma * (1 - terminals),
                                           final_value=bootstrap, time_major=True)
    returns = losses.n_step_returns(rewards, terminals.astype(bool), bootstrap, gamma)
    np.testing.assert_allclose(returns, expected, rtol=1e-6)


def test_n_step_returns_traces_once_for_any_batch_size():
    returns_fn = tf.function(
        lambda r, d, b: losses.n_step_returns(r, d, b, 0.9),
        input_signature=[tf.TensorSpec((3, None), tf.float32)] * 2
        + [tf.TensorSpec((None,), tf.float32)])
    for batch in (2, 5):
        out = returns_fn(tf.ones((3, batch)), tf.zeros((3, batch)), tf.zeros(batch))
        # 1 + .9 + .81 with a zero bootstrap.
        np.testing.assert_allclose(out[0], np.full(batch, 2.71), rtol=1e-6)
    assert returns_fn.experimental_get_tracing_count() == 1


def test_sequence_returns_match_tf_agents_per_sequence():
    """GA3C's agents' sequences laid end to end: each one's returns are tf-agents' discounted
    return of that sequence alone, bootstrapped from its own end value."""
    rng = np.random.default_rng(5)
    lengths, gamma = (5, 2, 1, 5), 0.9
    rewards = rng.normal(size=sum(lengths)).astype(np.float32)
    end_values = [rng.normal(), 0.0, rng.normal(), rng.normal()]  # 0.0: a terminal sequence
    ends, ends_at, expected, start = [], [], [], 0
    for length, end_value in zip(lengths, end_values):
        ends += [0.0] * (length - 1) + [1.0]
        ends_at += [0.0] * (length - 1) + [end_value]
        chunk = rewards[start:start + length, None]
        expected.append(value_ops.discounted_return(
            chunk, np.full_like(chunk, gamma), final_value=np.float32([end_value]),
            time_major=True)[:, 0])
        start += length
    returns = losses.sequence_returns(rewards, np.float32(ends), np.float32(ends_at), gamma)
    np.testing.assert_allclose(returns, np.concatenate(expected), rtol=1e-5, atol=1e-6)


def test_sequence_returns_hand_computed():
    # Sequences [1, 0] ending in value 10 and [2] ending terminal: 1 + .5 * (0 + .5 * 10) = 3.5.
    returns = losses.sequence_returns([1., 0., 2.], [0., 1., 1.], [0., 10., 0.], 0.5)
    np.testing.assert_allclose(returns, [3.5, 5.0, 2.0], rtol=1e-6)


def _flat_scan_sequence_returns(rewards, sequence_ends, end_values, gamma):
    """sequence_returns as it was: one scan step per element of the flat batch."""
    rewards = tf.convert_to_tensor(rewards)
    ends = tf.cast(sequence_ends, rewards.dtype)
    bootstrapped = rewards + gamma * ends * tf.cast(end_values, rewards.dtype)
    return losses.n_step_returns(bootstrapped[:, None], ends[:, None],
                                 tf.zeros([1], rewards.dtype), gamma)[:, 0]


def _random_sequences(rng, lengths, open_tail=0):
    """rewards, sequence ends, end values of sequences of lengths laid end to end, then
    open_tail steps with no end."""
    ends = np.concatenate([np.eye(length, dtype=np.float32)[-1] for length in lengths] +
                          [np.zeros(open_tail, np.float32)])
    size = len(ends)
    end_values = np.where(ends > 0, rng.normal(size=size) * 3, 0).astype(np.float32)
    return rng.normal(size=size).astype(np.float32), ends, end_values


@pytest.mark.parametrize('lengths, open_tail', [((5, 5, 3, 1, 5, 2, 5, 4), 0),
                                                ((1, 1, 1), 0), ((4, 2), 3), ((), 4),
                                                ((), 0), ((30, 5), 0)])
def test_sequence_returns_equal_the_flat_scan_bit_for_bit(lengths, open_tail):
    """Scanning the sequences' steps side by side gives exactly what scanning the flat batch
    one element at a time gave, through a tf.function of any batch size (one trace)."""
    rng = np.random.default_rng(len(lengths) + open_tail)
    spec = tf.TensorSpec((None,), tf.float32)
    returns_fn = tf.function(lambda *batch: losses.sequence_returns(*batch, 0.99),
                             input_signature=[spec] * 3)
    for _ in range(2):
        batch = _random_sequences(rng, lengths, open_tail)
        got = returns_fn(*batch).numpy()
        assert got.shape == (sum(lengths) + open_tail,)
        np.testing.assert_array_equal(
            got, _flat_scan_sequence_returns(*batch, 0.99).numpy())
    assert returns_fn.experimental_get_tracing_count() == 1


def test_sequence_returns_scan_as_many_steps_as_the_longest_sequence(monkeypatch):
    """GA3C's batch of 8 agents' sequences (horizon 5): n_step_returns scans 5 steps of 9 rows
    (8 sequences and the empty one after the last end), not 34 steps of one."""
    shapes = []
    n_step_returns = losses.n_step_returns

    def recorded(rewards, terminals, bootstrap_values, gamma):
        shapes.append(tuple(rewards.shape))
        return n_step_returns(rewards, terminals, bootstrap_values, gamma)

    monkeypatch.setattr(losses, 'n_step_returns', recorded)
    batch = _random_sequences(np.random.default_rng(0), (5, 5, 3, 1, 5, 5, 5, 5, 3)[:8])
    losses.sequence_returns(*batch, 0.9)
    assert shapes == [(5, 9)]


@pytest.mark.parametrize('lam', [0.0, 0.95, 1.0])
def test_gae_matches_tf_agents(lam):
    rewards, values, terminals, bootstrap = random_rollout(1)
    gamma = 0.99
    # tf-agents: values [T, B], final_value [B], discounts [T, B]; td_lambda multiplies discounts.
    expected = value_ops.generalized_advantage_estimation(
        values, bootstrap, gamma * (1 - terminals), rewards, td_lambda=lam, time_major=True)
    advantages = losses.generalized_advantage_estimation(rewards, values, terminals, bootstrap,
                                                         gamma, lam)
    np.testing.assert_allclose(advantages, expected, rtol=1e-5, atol=1e-6)


def test_gae_with_lambda_one_is_n_step_return_minus_value():
    rewards, values, terminals, bootstrap = random_rollout(2)
    advantages = losses.generalized_advantage_estimation(rewards, values, terminals, bootstrap,
                                                         0.9, 1.0)
    returns = losses.n_step_returns(rewards, terminals, bootstrap, 0.9)
    np.testing.assert_allclose(advantages, returns - values, rtol=1e-5, atol=1e-6)


LOGITS = np.array([[1., 2., 3.], [0.5, 0., -0.5]], np.float32)
VALUES = np.array([0.5, -1.], np.float32)
ACTIONS = np.array([2, 0], np.int32)
RETURNS = np.array([1.5, -2.], np.float32)


def numpy_actor_critic_loss(entropy_coef, value_loss_coef, log_epsilon):
    """The 2x3 case written out in numpy."""
    probs = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=1, keepdims=True)
    log_probs = np.log(probs + log_epsilon)
    advantages = RETURNS - VALUES  # [1, -1]
    policy_loss = -np.mean(log_probs[[0, 1], ACTIONS] * advantages)
    entropy = np.mean(-(probs * log_probs).sum(axis=1))
    value_loss = np.mean((RETURNS - VALUES) ** 2)  # (1 + 1) / 2
    total = policy_loss - entropy_coef * entropy + value_loss_coef * value_loss
    return total, policy_loss, value_loss, entropy


@pytest.mark.parametrize('log_epsilon', [0.0, 0.05])
def test_actor_critic_loss_matches_numpy(log_epsilon):
    loss = losses.actor_critic_loss(LOGITS, VALUES, ACTIONS, RETURNS, entropy_coef=0.01,
                                    value_loss_coef=0.5, log_epsilon=log_epsilon)
    expected = numpy_actor_critic_loss(0.01, 0.5, log_epsilon)
    np.testing.assert_allclose(
        [loss.total, loss.policy_loss, loss.value_loss, loss.entropy], expected, rtol=1e-5)
    # Row 0: log softmax([1, 2, 3])[2] = -0.407606; row 1: log softmax([.5, 0, -.5])[0] = -0.680270.
    if log_epsilon == 0:
        np.testing.assert_allclose(loss.policy_loss, -(-0.407606 + 0.680270) / 2, rtol=1e-5)
        assert float(loss.value_loss) == pytest.approx(1.0)


def test_actor_critic_loss_log_epsilon_changes_the_loss():
    plain = losses.actor_critic_loss(LOGITS, VALUES, ACTIONS, RETURNS, entropy_coef=0.01)
    ga3c = losses.actor_critic_loss(LOGITS, VALUES, ACTIONS, RETURNS, entropy_coef=0.01,
                                    log_epsilon=0.05)
    assert abs(float(plain.policy_loss) - float(ga3c.policy_loss)) > 1e-3


def test_actor_critic_loss_critic_is_trained_only_by_the_value_term():
    values = tf.Variable(VALUES)
    returns = tf.Variable(RETURNS)
    with tf.GradientTape(persistent=True) as tape:
        loss = losses.actor_critic_loss(LOGITS, values, ACTIONS, returns, entropy_coef=0.01,
                                        value_loss_coef=0.5)
    # d/dV of 0.5 * mean((R - V)^2) = -(R - V) / N = -[1, -1] / 2; the advantage is a constant.
    np.testing.assert_allclose(tape.gradient(loss.total, values), [-0.5, 0.5], rtol=1e-6)
    assert tape.gradient(loss.policy_loss, values) is None
    assert tape.gradient(loss.total, returns) is None


Q_VALUES = np.array([[1., 2.], [3., 0.5], [0., 2.5]], np.float32)
Q_ACTIONS = np.array([1, 0, 1], np.int32)
Q_REWARDS = np.array([1., 0., -0.5], np.float32)
Q_TERMINALS = np.array([0., 1., 0.], np.float32)
NEXT_Q_TARGET = np.array([[5., 1.], [2., 2.], [0., 4.]], np.float32)
NEXT_Q_ONLINE = np.array([[0., 1.], [1., 0.], [3., 0.]], np.float32)


def test_dqn_loss_hand_computed():
    loss, td_errors, mean_max_q = losses.dqn_loss(Q_VALUES, Q_ACTIONS, Q_REWARDS, Q_TERMINALS,
                                                  NEXT_Q_TARGET, gamma=0.9)
    assert float(mean_max_q) == pytest.approx((2.0 + 3.0 + 2.5) / 3, rel=1e-6)
    # targets: 1 + .9*5 = 5.5; 0 (terminal); -.5 + .9*4 = 3.1. Q(s, a) = [2, 3, 2.5].
    np.testing.assert_allclose(td_errors, [3.5, -3.0, 0.6], rtol=1e-6)
    # Huber(delta=1): 3.5 - .5 = 3.0; 3 - .5 = 2.5; .5 * .6^2 = .18.
    assert float(loss) == pytest.approx((3.0 + 2.5 + 0.18) / 3, rel=1e-6)


def test_double_dqn_loss_hand_computed():
    loss, td_errors, _ = losses.dqn_loss(Q_VALUES, Q_ACTIONS, Q_REWARDS, Q_TERMINALS,
                                         NEXT_Q_TARGET, gamma=0.9, next_q_online=NEXT_Q_ONLINE)
    # online argmax [1, 0, 0] -> target values [1, 2, 0]; targets 1.9, 0 (terminal), -.5.
    np.testing.assert_allclose(td_errors, [-0.1, -3.0, -3.0], rtol=1e-5)
    # Huber: .5 * .1^2 = .005; 2.5; 2.5.
    assert float(loss) == pytest.approx((0.005 + 2.5 + 2.5) / 3, rel=1e-5)


def test_importance_weights_scale_each_samples_huber_term():
    weights = np.array([0.5, 1.0, 0.25], np.float32)
    loss, td_errors, _ = losses.dqn_loss(Q_VALUES, Q_ACTIONS, Q_REWARDS, Q_TERMINALS,
                                         NEXT_Q_TARGET, gamma=0.9, weights=weights)
    np.testing.assert_allclose(td_errors, [3.5, -3.0, 0.6], rtol=1e-6)  # unweighted
    # Huber terms 3.0, 2.5, .18 (test above), weighted: 1.5 + 2.5 + .045.
    assert float(loss) == pytest.approx((1.5 + 2.5 + 0.045) / 3, rel=1e-6)


def test_dqn_loss_huber_delta_and_no_gradient_into_target():
    q_values = tf.Variable(Q_VALUES)
    next_q_target = tf.Variable(NEXT_Q_TARGET)
    with tf.GradientTape(persistent=True) as tape:
        loss, _, _ = losses.dqn_loss(q_values, Q_ACTIONS, Q_REWARDS, Q_TERMINALS, next_q_target,
                                     gamma=0.9, huber_delta=4.0)
    # All |td| <= 4: quadratic, .5 * (3.5^2 + 3^2 + .6^2) / 3.
    assert float(loss) == pytest.approx(0.5 * (12.25 + 9.0 + 0.36) / 3, rel=1e-6)
    assert tape.gradient(loss, next_q_target) is None
    # d/dQ(s,a) of mean(.5 td^2) = -td / 3, only at the taken actions.
    np.testing.assert_allclose(tape.gradient(loss, q_values),
                               [[0., -3.5 / 3], [1.0, 0.], [0., -0.2]], rtol=1e-5, atol=1e-7)


def test_categorical_projection_hand_computed():
    support = tf.constant([-1., 0., 1.])
    probs = tf.constant([[0.2, 0.5, 0.3], [0.2, 0.5, 0.3]])
    projected = losses.categorical_projection(probs, tf.constant([0.5, 0.5]),
                                              tf.constant([0., 1.]), 0.5, support)
    # Row 0: atoms move to [0, .5, 1]; the .5 at 0.5 splits evenly between 0 and 1.
    # Row 1 (terminal): every atom lands on 0.5 and splits evenly.
    np.testing.assert_allclose(projected, [[0., 0.45, 0.55], [0., 0.5, 0.5]], atol=1e-6)


def test_categorical_projection_matches_tf_agents():
    rng = np.random.default_rng(3)
    support = np.linspace(-10., 10., 51).astype(np.float32)
    logits = rng.normal(size=(6, 51)).astype(np.float32)
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    rewards = np.array([0., 1., -1., 7.5, -30., 30.], np.float32)  # the last two clip
    terminals = np.array([0., 0., 1., 0., 0., 1.], np.float32)
    gamma = 0.99
    shifted = rewards[:, None] + gamma * (1 - terminals)[:, None] * support[None, :]
    expected = project_distribution(tf.constant(shifted), tf.constant(probs),
                                    tf.constant(support))
    projected = losses.categorical_projection(probs, rewards, terminals, gamma, support)
    np.testing.assert_allclose(projected, expected, atol=1e-6)
    np.testing.assert_allclose(np.sum(projected, axis=1), np.ones(6), rtol=1e-5)


def _ppo_batch(seed, batch=12, num_actions=4):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(batch, num_actions)).astype(np.float32)
    values = rng.normal(size=batch).astype(np.float32)
    actions = rng.integers(0, num_actions, batch).astype(np.int32)
    # Old log-probabilities near the new ones, so that some ratios fall inside the clip range.
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    old_log_probs = (log_probs[np.arange(batch), actions]
                     + rng.normal(scale=0.3, size=batch)).astype(np.float32)
    advantages = rng.normal(size=batch).astype(np.float32)
    returns = rng.normal(size=batch).astype(np.float32)
    return logits, values, actions, old_log_probs, advantages, returns


def test_ppo_clip_loss_hand_computed():
    logits, values, actions, old_log_probs, advantages, returns = _ppo_batch(0)
    loss = losses.ppo_clip_loss(logits, values, actions, old_log_probs, advantages, returns,
                                ratio_clip=0.2, entropy_coef=0.01, value_loss_coef=0.5)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    chosen = log_probs[np.arange(len(actions)), actions]
    ratios = np.exp(chosen - old_log_probs)
    assert ((ratios < 0.8) | (ratios > 1.2)).any() and ((ratios > 0.8) & (ratios < 1.2)).any()
    surrogate = np.minimum(ratios * advantages, np.clip(ratios, 0.8, 1.2) * advantages)
    entropy = -(np.exp(log_probs) * log_probs).sum(-1).mean()
    value_loss = np.mean((returns - values) ** 2)
    np.testing.assert_allclose(loss.policy_loss, -surrogate.mean(), rtol=1e-5)
    np.testing.assert_allclose(loss.entropy, entropy, rtol=1e-5)
    np.testing.assert_allclose(loss.value_loss, value_loss, rtol=1e-5)
    np.testing.assert_allclose(loss.total, -surrogate.mean() - 0.01 * entropy + 0.5 * value_loss,
                               rtol=1e-5)
    np.testing.assert_allclose(loss.clip_fraction, np.mean(np.abs(ratios - 1) > 0.2), rtol=1e-6)
    np.testing.assert_allclose(loss.approx_kl, np.mean(old_log_probs - chosen), rtol=1e-5)
    np.testing.assert_allclose(loss.approx_kl_k2, 0.5 * np.mean((old_log_probs - chosen) ** 2),
                               rtol=1e-5)


def test_ppo_clipped_objective_matches_tf_agents():
    """tf-agents' PPOClipAgent.policy_gradient_loss on the same batch, the oracle."""
    logits, values, actions, old_log_probs, advantages, returns = _ppo_batch(1)
    batch, num_actions = logits.shape
    observation_spec = tensor_spec.TensorSpec((3,), tf.float32)
    action_spec = tensor_spec.BoundedTensorSpec((), tf.int32, 0, num_actions - 1)
    agent = ppo_clip_agent.PPOClipAgent(
        ts.time_step_spec(observation_spec), action_spec, tf.keras.optimizers.Adam(1e-3),
        actor_net=actor_distribution_network.ActorDistributionNetwork(
            observation_spec, action_spec, fc_layer_params=(4,)),
        value_net=value_network.ValueNetwork(observation_spec, fc_layer_params=(4,)),
        importance_ratio_clipping=0.2)
    expected = agent.policy_gradient_loss(
        ts.restart(tf.zeros((batch, 3)), batch_size=batch), tf.constant(actions),
        tf.constant(old_log_probs), tf.constant(advantages),
        tfp.distributions.Categorical(logits=logits), tf.ones(batch))
    loss = losses.ppo_clip_loss(logits, values, actions, old_log_probs, advantages, returns,
                                ratio_clip=0.2, entropy_coef=0.0, value_loss_coef=0.0)
    np.testing.assert_allclose(loss.policy_loss, expected, rtol=1e-5)
    np.testing.assert_allclose(loss.total, expected, rtol=1e-5)
