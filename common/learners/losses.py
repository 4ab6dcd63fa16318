"""Returns, advantages and losses of the four papers as pure TF functions (tf.function-safe).

Rollout tensors are time-major, [T, N]; terminal_t = 1 means the episode ended at step t, so
nothing after t is bootstrapped into step t.
"""
from typing import NamedTuple

import tensorflow as tf


class ActorCriticLoss(NamedTuple):
    """The optimized total and its parts, each a scalar mean over the batch."""
    total: tf.Tensor
    policy_loss: tf.Tensor
    value_loss: tf.Tensor
    entropy: tf.Tensor


class DQNLoss(NamedTuple):
    """The mean loss, the per-sample errors for priorities (TD errors, target - Q, or the
    categorical loss's KL divergences or cross-entropies), and the batch's mean of max_a
    Q(s, a): the value estimate a run logs, which shows a network that has stopped predicting
    returns."""
    loss: tf.Tensor
    td_errors: tf.Tensor
    mean_max_q: tf.Tensor


def continuation(terminals, dtype):
    """1 - terminal in the reward dtype, for terminals given as bool, int or float."""
    return 1.0 - tf.cast(terminals, dtype)


def n_step_returns(rewards, terminals, bootstrap_values, gamma):
    """R_t = r_t + gamma * (1 - terminal_t) * R_{t+1}, R_T = bootstrap_values [N]; -> [T, N]."""
    rewards = tf.convert_to_tensor(rewards)
    discounts = gamma * continuation(terminals, rewards.dtype)
    return tf.scan(lambda next_return, step: step[0] + step[1] * next_return,
                   (rewards, discounts), initializer=tf.cast(bootstrap_values, rewards.dtype),
                   reverse=True)


def sequence_returns(rewards, sequence_ends, end_values, gamma):
    """n-step returns of sequences laid end to end in one flat batch [N]: within a sequence
    R_t = r_t + gamma * R_{t+1}; at its last step (sequence_ends = 1) R_t = r_t + gamma * v,
    v = end_values there (the bootstrap value, 0 after a terminal step). Steps after the last
    end form one more sequence, bootstrapped from 0.

    The sequences are laid out as the rows of [num_sequences, longest] (zeros after each one's
    end) and n_step_returns scans their steps, all rows at once: as many sequential steps as
    the longest sequence (GA3C's horizon, its TIME_MAX of 5), not one per element of the batch,
    each element computed by the same operations as a scan over the flat batch."""
    rewards = tf.convert_to_tensor(rewards)
    ends = tf.cast(sequence_ends, rewards.dtype)
    bootstrapped = rewards + gamma * ends * tf.cast(end_values, rewards.dtype)
    is_end = tf.cast(tf.not_equal(ends, 0), tf.int32)
    sequence = tf.cumsum(is_end, exclusive=True)   # each element's sequence (its row)
    num_sequences = tf.reduce_sum(is_end) + 1      # + the steps after the last end, if any
    lengths = tf.math.unsorted_segment_sum(tf.ones_like(is_end), sequence, num_sequences)
    starts = tf.cumsum(lengths, exclusive=True)
    step = tf.range(tf.size(is_end)) - tf.gather(starts, sequence)  # its column
    cells = tf.stack([step, sequence], axis=1)
    # At least one step: a scan over none cannot stack its unknown-width rows (empty batch).
    shape = tf.stack([tf.maximum(tf.reduce_max(lengths), 1), num_sequences])
    returns = n_step_returns(tf.scatter_nd(cells, bootstrapped, shape),
                             tf.scatter_nd(cells, ends, shape),
                             tf.zeros([num_sequences], rewards.dtype), gamma)
    return tf.gather_nd(returns, cells)


def generalized_advantage_estimation(rewards, values, terminals, bootstrap_values, gamma, lam):
    """GAE (Schulman et al. 2016): A_t = delta_t + gamma * lam * (1 - terminal_t) * A_{t+1}.

    delta_t = r_t + gamma * (1 - terminal_t) * V_{t+1} - V_t, with V_T = bootstrap_values.
    """
    rewards = tf.convert_to_tensor(rewards)
    values = tf.cast(values, rewards.dtype)
    discounts = gamma * continuation(terminals, rewards.dtype)
    next_values = tf.concat([values[1:], tf.cast(bootstrap_values, rewards.dtype)[None]], axis=0)
    deltas = rewards + discounts * next_values - values
    return tf.scan(lambda next_advantage, step: step[0] + step[1] * next_advantage,
                   (deltas, lam * discounts), initializer=tf.zeros_like(deltas[0]),
                   reverse=True)


def select(per_action, actions):
    """per_action[..., actions[...]]: the entry of the taken action in each row."""
    return tf.reduce_sum(
        per_action * tf.one_hot(actions, tf.shape(per_action)[-1], dtype=per_action.dtype),
        axis=-1)


def actor_critic_loss(logits, values, actions, returns, entropy_coef, value_loss_coef=0.5,
                      log_epsilon=0.0, weights=None):
    """A3C's loss: policy gradient on stop_gradient(R - V), entropy bonus, squared value error.

    log_epsilon > 0 uses GA3C's eq. (5), log(pi + epsilon) in the log-probability and the
    entropy, which bounds the gradient for stale (lagged) policies; 0 uses log_softmax.
    Returns are targets: no gradient flows into them. weights [N] (None: all 1) make each mean
    a weighted one, sum(w x) / sum(w): weight 0 leaves padding rows out of a batch padded to a
    fixed size.
    """
    returns = tf.stop_gradient(returns)
    if log_epsilon > 0:
        probs = tf.nn.softmax(logits)
        log_probs = tf.math.log(probs + log_epsilon)
    else:
        log_probs = tf.nn.log_softmax(logits)
        probs = tf.exp(log_probs)
    if weights is None:
        mean = tf.reduce_mean
    else:
        weights = tf.cast(weights, values.dtype)

        def mean(per_row):
            return tf.reduce_sum(weights * per_row) / tf.reduce_sum(weights)
    advantages = tf.stop_gradient(returns - values)
    policy_loss = -mean(select(log_probs, actions) * advantages)
    entropy = mean(-tf.reduce_sum(probs * log_probs, axis=-1))
    value_loss = mean(tf.square(returns - values))
    total = policy_loss - entropy_coef * entropy + value_loss_coef * value_loss
    return ActorCriticLoss(total=total, policy_loss=policy_loss, value_loss=value_loss,
                           entropy=entropy)


class PPOLoss(NamedTuple):
    """The optimized total, its parts and diagnostics, each a scalar mean over the batch."""
    total: tf.Tensor
    policy_loss: tf.Tensor
    value_loss: tf.Tensor
    entropy: tf.Tensor
    clip_fraction: tf.Tensor   # share of samples whose ratio left [1 - clip, 1 + clip]
    approx_kl: tf.Tensor       # mean(old log pi - new log pi), an estimate of KL(old || new)
    approx_kl_k2: tf.Tensor    # mean((old log pi - new log pi)^2) / 2, another (never negative);
                               # rl_games adapts its learning rate by it (a2c_discrete.py)


def ppo_clip_loss(logits, values, actions, old_log_probs, advantages, returns, ratio_clip,
                  entropy_coef, value_loss_coef):
    """PPO's clipped objective (Schulman et al. 2017, eq. 7 and 9) as a loss to minimize:
    -mean(min(rho A, clip(rho, 1 - c, 1 + c) A)) + value_loss_coef mean((R - V)^2)
    - entropy_coef H, rho = pi(a|s) / pi_old(a|s). Advantages and returns are targets."""
    advantages = tf.stop_gradient(advantages)
    returns = tf.stop_gradient(returns)
    log_probs = tf.nn.log_softmax(logits)
    chosen = select(log_probs, actions)
    ratios = tf.exp(chosen - old_log_probs)
    clipped = tf.clip_by_value(ratios, 1.0 - ratio_clip, 1.0 + ratio_clip)
    policy_loss = -tf.reduce_mean(tf.minimum(ratios * advantages, clipped * advantages))
    value_loss = tf.reduce_mean(tf.square(returns - values))
    entropy = tf.reduce_mean(-tf.reduce_sum(tf.exp(log_probs) * log_probs, axis=-1))
    total = policy_loss - entropy_coef * entropy + value_loss_coef * value_loss
    outside = tf.cast(tf.abs(ratios - 1.0) > ratio_clip, tf.float32)
    return PPOLoss(total=total, policy_loss=policy_loss, value_loss=value_loss, entropy=entropy,
                   clip_fraction=tf.reduce_mean(outside),
                   approx_kl=tf.reduce_mean(old_log_probs - chosen),
                   approx_kl_k2=0.5 * tf.reduce_mean(tf.square(old_log_probs - chosen)))


def huber(errors, delta):
    """Elementwise Huber: quadratic within +-delta, linear (slope delta) outside."""
    abs_errors = tf.abs(errors)
    quadratic = tf.minimum(abs_errors, delta)
    return 0.5 * tf.square(quadratic) + delta * (abs_errors - quadratic)


def dqn_loss(q_values, actions, rewards, terminals, next_q_target, gamma, next_q_online=None,
             huber_delta=1.0, weights=None):
    """One-step (double) DQN: Huber(r + gamma * (1 - terminal) * Q_target(s', a*) - Q(s, a)).

    a* = argmax Q_target(s') (Mnih et al. 2015), or argmax Q_online(s') when next_q_online is
    given (double DQN, van Hasselt et al. 2016). For n-step transitions, r is their discounted
    sum and gamma the bootstrap's gamma^n. weights: per-sample importance weights of
    prioritized replay (Schaul et al. 2016, Algorithm 1), multiplying each Huber term before
    the mean. Shapes: Q [N, A], the rest [N].
    """
    rewards = tf.cast(rewards, q_values.dtype)
    if next_q_online is None:
        next_values = tf.reduce_max(next_q_target, axis=-1)
    else:
        next_values = select(next_q_target, tf.argmax(next_q_online, axis=-1))
    targets = tf.stop_gradient(
        rewards + gamma * continuation(terminals, q_values.dtype) * next_values)
    td_errors = targets - select(q_values, actions)
    per_sample = huber(td_errors, huber_delta)
    if weights is not None:
        per_sample = per_sample * tf.stop_gradient(tf.cast(weights, per_sample.dtype))
    return DQNLoss(loss=tf.reduce_mean(per_sample), td_errors=td_errors,
                   mean_max_q=tf.reduce_mean(tf.reduce_max(q_values, axis=-1)))


# What a categorical loss's per-sample errors (the priorities) are: 'kl', the KL divergence of
# the prediction from the projected target, as Hessel et al. (2018, section 3) and the authors'
# code of Stooke & Abbeel (astooke/accel_rl, accel_rl/algos/dqn/cat_dqn.py) prioritize; or
# 'cross_entropy', the minimized loss itself, as Dopamine's Rainbow does. They differ by the
# target's entropy, which floors every cross-entropy and so flattens the priorities.
CATEGORICAL_PRIORITIES = ('kl', 'cross_entropy')


def categorical_dqn_loss(atom_logits, actions, rewards, terminals, next_atom_logits_target,
                         gamma, support, next_q_online=None, weights=None, priority='kl'):
    """Categorical DQN (Bellemare et al. 2017, Algorithm 1): the cross-entropy between the
    projected target distribution of (r, gamma, Z_target(s', a*)) and the predicted one of
    (s, a). a* = argmax of the target network's expected values, or of next_q_online's (double
    DQN, as Rainbow). weights: per-sample importance weights of prioritized replay. Returns
    DQNLoss whose td_errors are the per-sample KL divergences or cross-entropies (priority, one
    of CATEGORICAL_PRIORITIES), what Rainbow's priorities take. Shapes: logits [N, A, K],
    support [K], the rest [N]."""
    if priority not in CATEGORICAL_PRIORITIES:
        raise ValueError(f'priority={priority!r}; allowed: {", ".join(CATEGORICAL_PRIORITIES)}')
    support = tf.cast(support, atom_logits.dtype)
    next_probs = tf.nn.softmax(next_atom_logits_target)
    chooser = (tf.reduce_sum(next_probs * support, axis=-1) if next_q_online is None
               else next_q_online)
    next_actions = tf.argmax(chooser, axis=-1, output_type=tf.int32)
    chosen_next = tf.gather(next_probs, next_actions, axis=1, batch_dims=1)      # [N, K]
    targets = tf.stop_gradient(
        categorical_projection(chosen_next, rewards, terminals, gamma, support))
    chosen_logits = tf.gather(atom_logits, tf.cast(actions, tf.int32), axis=1, batch_dims=1)
    cross_entropies = -tf.reduce_sum(targets * tf.nn.log_softmax(chosen_logits), axis=-1)
    per_sample = cross_entropies
    if weights is not None:
        per_sample = per_sample * tf.stop_gradient(tf.cast(weights, per_sample.dtype))
    errors = cross_entropies
    if priority == 'kl':  # cross-entropy minus the target's entropy, >= 0 but for rounding
        errors = tf.maximum(cross_entropies + tf.reduce_sum(tf.math.xlogy(targets, targets),
                                                            axis=-1), 0.0)
    q_values = tf.reduce_sum(tf.nn.softmax(atom_logits) * support, axis=-1)
    return DQNLoss(loss=tf.reduce_mean(per_sample), td_errors=errors,
                   mean_max_q=tf.reduce_mean(tf.reduce_max(q_values, axis=-1)))


def categorical_projection(next_probs, rewards, terminals, gamma, support):
    """C51's target (Bellemare et al. 2017, eq. 7): r + gamma * (1 - terminal) * z projected on z.

    next_probs: [N, K] probabilities of the chosen next action over the fixed, evenly spaced
    support [K]. Each shifted atom's mass goes to its two nearest support atoms, linearly.
    """
    support = tf.cast(support, next_probs.dtype)
    rewards = tf.cast(rewards, next_probs.dtype)
    discounts = gamma * continuation(terminals, next_probs.dtype)
    shifted = tf.clip_by_value(rewards[:, None] + discounts[:, None] * support[None, :],
                               support[0], support[-1])
    atom_spacing = support[1] - support[0]
    # weights[n, i, j]: share of shifted atom j that lands on support atom i.
    weights = tf.clip_by_value(
        1.0 - tf.abs(shifted[:, None, :] - support[None, :, None]) / atom_spacing, 0.0, 1.0)
    return tf.reduce_sum(weights * next_probs[:, None, :], axis=-1)
