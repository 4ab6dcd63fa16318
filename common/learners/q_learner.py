"""The Q-learner: online and target Q networks, centered RMSProp (Mnih et al. 2015), and the
tf.functions of the hot path: greedy actions from either network, one update, K updates in one
call. Double DQN (van Hasselt et al. 2016) and dueling networks (Wang et al. 2016) are switches;
updates return per-sample TD errors, what prioritized replay needs."""
import dataclasses

import tensorflow as tf

from common.learners import interval_means
from common.learners import losses
from common.learners import optim
from common.learners import xla
from common.scale import distribute

__all__ = ('QSettings', 'UPDATE_STATS', 'QLearner', 'centered_rmsprop')


@dataclasses.dataclass(frozen=True)
class QSettings:
    """What the update optimizes: Huber(r + gamma (1 - terminal) Q_target(s', a*) - Q(s, a)),
    a* from the target network, or from the online one with double_dqn. n_step > 1: r is the
    replay's discounted sum of n rewards and the bootstrap is discounted by gamma^n.
    importance_weighted: weighted updates for prioritized replay (weighted_train_step).
    clip_norm > 0: the gradient scaled to at most this global norm (rlpyt's DQN clips at 10;
    Nature DQN clips the error instead, huber_delta). categorical_priority: what a categorical
    update returns as its per-sample errors (losses.CATEGORICAL_PRIORITIES)."""
    gamma: float
    double_dqn: bool = False
    huber_delta: float = 1.0
    n_step: int = 1
    importance_weighted: bool = False
    categorical: bool = False  # the network has a support: categorical DQN's loss
    clip_norm: float = 0.0
    categorical_priority: str = 'kl'


# Interval means a Q-learner logs: the loss, the batch's mean max_a Q(s, a) under the online
# network, and the gradient's global norm before any clipping.
UPDATE_STATS = ('loss', 'mean_max_q', 'grad_norm')


class QLearner(tf.Module):
    """make_network() -> a built Q network [N, A]; called twice (online, target). jit_compile:
    every call of either network runs XLA-compiled (common/learners/xla.py)."""

    def __init__(self, make_network, num_actions, optimizer, settings, observation_spec,
                 name='q_learner', jit_compile=False):
        super().__init__(name=name)
        self.num_actions = num_actions
        self.settings = settings
        self.jit_compile = jit_compile
        self.online = make_network()
        self.target = make_network()
        # Q-values, or a categorical network's atom logits, of either network.
        self.call_online, self.call_target = (
            xla.compiled_call(lambda obs, net=net: net(obs), jit_compile)
            for net in (self.online, self.target))
        self.online_atoms, self.target_atoms = (
            xla.compiled_call(lambda obs, net=net: net.atom_logits(obs), jit_compile)
            for net in (self.online, self.target))
        if settings.categorical != (getattr(self.online, 'support', None) is not None):
            raise ValueError(f'QSettings.categorical={settings.categorical} needs a network '
                             f'{"with" if settings.categorical else "without"} a support')
        if settings.categorical_priority not in losses.CATEGORICAL_PRIORITIES:
            raise ValueError(f'QSettings.categorical_priority={settings.categorical_priority!r}; '
                             f'allowed: {", ".join(losses.CATEGORICAL_PRIORITIES)}')
        self.optimizer = optimizer
        self.optimizer.build(self.online.trainable_variables)
        self.update_means = interval_means.IntervalMeans(UPDATE_STATS)
        strategy = self.strategy = distribute.current_strategy()
        # Under a one-machine strategy each replica acts for its own sampler groups.
        self.online_greedy = distribute.acting(
            strategy, lambda obs: self._greedy(self.call_online, obs), [observation_spec])
        self.target_greedy = tf.function(lambda obs: self._greedy(self.call_target, obs),
                                         input_signature=[observation_spec])
        batch_signature = [
            observation_spec, tf.TensorSpec((None,), tf.int32), tf.TensorSpec((None,), tf.float32),
            observation_spec, tf.TensorSpec((None,), tf.float32)]
        stack_signature = [tf.TensorSpec((None,) + tuple(spec.shape), spec.dtype)
                           for spec in batch_signature]
        weighted_signature = batch_signature + [tf.TensorSpec((None,), tf.float32)]
        if strategy is not None:
            # Built under a tf.distribute scope: every minibatch is split over the replicas
            # (distribute.run_split), their TD errors laid end to end again.
            self.train_step = distribute.replicated(strategy, self._train_step, (0,) * 5,
                                                    batch_signature, gather=True)
            self.train_steps = tf.function(
                lambda *stack: self._replicated_train_steps(strategy, stack),
                input_signature=stack_signature)
            self.weighted_train_step = distribute.replicated(
                strategy, self._train_step, (0,) * 6, weighted_signature, gather=True)
        else:
            self.train_step = tf.function(self._train_step, input_signature=batch_signature)
            self.train_steps = tf.function(self._train_steps, input_signature=stack_signature)
            self.weighted_train_step = tf.function(self._train_step,
                                                   input_signature=weighted_signature)
        self.update_target()
        # The acting functions trace here, in one thread: Keras models are not safe to trace from
        # several threads at once, and acting threads call these while a trainer thread runs.
        # Each update function traces on its first call, in the one thread that calls it: a run
        # calls one of train_step, train_steps and weighted_train_step; tracing the others at
        # build was startup time for nothing (a backward pass's trace each).
        for function in (getattr(self.online_greedy, 'on_every_replica', self.online_greedy),
                         self.target_greedy):
            function.get_concrete_function()

    @staticmethod
    def _greedy(call_network, observations):
        return tf.argmax(call_network(observations), axis=-1, output_type=tf.int32)

    def update_target(self):
        """theta^- <- theta (eagerly: once per target period, and no trace per instance)."""
        for target, online in zip(self.target.variables, self.online.variables):
            target.assign(online)

    def loss(self, observations, actions, rewards, next_observations, terminals, weights=None):
        """losses.DQNLoss of the online network against the target network's bootstrap."""
        settings = self.settings
        next_q_online = self.call_online(next_observations) if settings.double_dqn else None
        gamma = settings.gamma ** settings.n_step
        if settings.categorical:
            return losses.categorical_dqn_loss(
                self.online_atoms(observations), actions, rewards, terminals,
                self.target_atoms(next_observations), gamma, self.online.support,
                next_q_online=next_q_online, weights=weights,
                priority=settings.categorical_priority)
        next_q_target = self.call_target(next_observations)
        return losses.dqn_loss(self.call_online(observations), actions, rewards, terminals,
                               next_q_target, gamma, next_q_online=next_q_online,
                               huber_delta=settings.huber_delta, weights=weights)

    def _train_step(self, observations, actions, rewards, next_observations, terminals,
                    weights=None):
        """One update (importance-weighted if weights); returns its per-sample TD errors
        (target - Q)."""
        variables = self.online.trainable_variables
        with tf.GradientTape() as tape:
            loss = self.loss(observations, actions, rewards, next_observations, terminals,
                             weights)
        gradients = distribute.mean_across_replicas(tape.gradient(loss.loss, variables))
        grad_norm = tf.linalg.global_norm(gradients)
        if self.settings.clip_norm > 0:
            gradients, _ = tf.clip_by_global_norm(gradients, self.settings.clip_norm,
                                                  use_norm=grad_norm)
        self.optimizer.apply_gradients(gradients, variables)
        self.update_means.add({'loss': loss.loss, 'mean_max_q': loss.mean_max_q,
                               'grad_norm': grad_norm})
        return loss.td_errors

    def _train_steps(self, observations, actions, rewards, next_observations, terminals):
        """One update per minibatch of a (K, B, ...) stack, in order; returns the TD errors
        [K, B]. A graph loop rather than K calls: the next minibatch's target-network pass,
        which no update in between changes, can run while the current update finishes."""
        num_batches = tf.shape(actions)[0]
        td_errors = tf.TensorArray(tf.float32, size=num_batches)
        for index in tf.range(num_batches):
            td_errors = td_errors.write(index, self._train_step(
                observations[index], actions[index], rewards[index], next_observations[index],
                terminals[index]))
        return td_errors.stack()


    def _replicated_train_steps(self, strategy, stack):
        """_train_steps on several replicas: the graph loop around one split update per
        minibatch (a synchronization cannot sit inside a loop of the replicas' function)."""
        num_batches = tf.shape(stack[1])[0]
        td_errors = tf.TensorArray(tf.float32, size=num_batches)
        for index in tf.range(num_batches):
            td_errors = td_errors.write(index, distribute.run_split(
                strategy, self._train_step, [field[index] for field in stack], (0,) * 5,
                gather=True))
        return td_errors.stack()


def centered_rmsprop(learning_rate, decay, epsilon, epsilon_inside_sqrt=True):
    """Centered RMSProp with mean squares from zeros (DeepMind's DQN and tf.keras start there).
    epsilon_inside_sqrt: sqrt(ms - mg^2 + epsilon) as DeepMind's DQN (NeuralQLearner.lua) and
    TF1's op; False: sqrt(ms - mg^2) + epsilon, as tf.keras' RMSprop without momentum (the
    optimizer of brett-daley/fast-dqn)."""
    return optim.RMSProp(learning_rate=learning_rate, decay=decay, epsilon=epsilon,
                         centered=True, epsilon_inside_sqrt=epsilon_inside_sqrt,
                         initial_mean_square=0.0)
