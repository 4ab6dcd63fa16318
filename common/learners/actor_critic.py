"""The advantage actor-critic learner that PAAC, GA3C and the A3C-CPU baseline share.

One model with policy logits and a value, its optimizer, and the tf.functions of the hot path:
sampling an action (Gumbel-max on a seeded generator), greedy acting, the policy and value for a
predictor, and updates on n-step returns, given (GA3C's agents' experience) or computed from a
(horizon + 1, N) rollout with its bootstrap state (PAAC, A2C). What differs between the papers is
a setting: the entropy and value coefficients, GA3C's log epsilon, the reduction over the batch
(the originals' codes sum or average), a loss scale, global-norm clipping.
"""
import dataclasses
from typing import Optional

import tensorflow as tf

from common.learners import activation_reuse
from common.learners import interval_means
from common.learners import losses
from common.learners import optim
from common.learners import xla
from common.scale import distribute

__all__ = ('UPDATE_STATS', 'REDUCTIONS', 'LossSettings', 'sequence_signature', 'sample_actions',
           'observation_spec', 'flat_steps', 'rollout_signature', 'PolicyLearner',
           'ActorCriticLearner')

# Per-update statistics, logged as means over each log interval.
UPDATE_STATS = ('loss', 'policy_loss', 'value_loss', 'entropy', 'grad_norm', 'learning_rate')
ACTING_SEED_OFFSET = 7919  # the acting generator's seed: the learner's seed plus this
REDUCTIONS = ('mean', 'sum')


@dataclasses.dataclass(frozen=True)
class LossSettings:
    """What the update optimizes: scale * reduction over the batch of
    (-log pi(a|s) A - entropy_coef H + value_loss_coef (R - V)^2), gradients clipped to
    clip_norm by global norm (0: none). gae_lambda None: advantages R - V on n-step returns;
    a float: generalized advantage estimation (Schulman et al. 2016) on rollouts."""
    gamma: float
    entropy_coef: float
    value_loss_coef: float
    clip_norm: float = 0.0
    log_epsilon: float = 0.0     # GA3C's eq. (5): log(pi + epsilon); 0: log_softmax
    reduction: str = 'mean'      # 'sum': the mean times the batch size, as GA3C's code
    scale: float = 1.0           # PAAC's code: loss_scaling 5
    gae_lambda: Optional[float] = None


def sequence_signature(observation_spec):
    """TensorSpecs of a batch of sequences: observations, actions, rewards, sequence ends (1.0
    at each sequence's last step) and end values (its bootstrap value there, else 0)."""
    return [observation_spec, tf.TensorSpec((None,), tf.int32)] + [
        tf.TensorSpec((None,), tf.float32)] * 3


def sample_actions(logits, generator):
    """One action per row of logits by the Gumbel-max trick from a seeded generator."""
    uniform = generator.uniform(tf.shape(logits), minval=1e-20, maxval=1.0)
    return tf.argmax(logits - tf.math.log(-tf.math.log(uniform)), axis=-1, output_type=tf.int32)


def observation_spec(env_config):
    """The TensorSpec of a batch of env_config's observations, for tf.function signatures."""
    return tf.TensorSpec((None,) + tuple(env_config.observation_shape),
                         tf.as_dtype(env_config.observation_dtype))


def flat_steps(observations):
    """(T, N, ...) observations as one (T * N, ...) batch, step-major."""
    return tf.reshape(observations, tf.concat([[-1], tf.shape(observations)[2:]], 0))


def rollout_signature(observation_spec, horizon):
    """TensorSpecs of a (horizon + 1, N) rollout: observations, actions, rewards, terminals."""
    shape = tuple(observation_spec.shape[1:])
    return [tf.TensorSpec((horizon + 1, None) + shape, observation_spec.dtype),
            tf.TensorSpec((horizon, None), tf.int32),
            tf.TensorSpec((horizon, None), tf.float32),
            tf.TensorSpec((horizon, None), tf.float32)]


class PolicyLearner(tf.Module):
    """What the learners of a model returning (logits, values) share: the model, its optimizer
    (built for its variables), a seeded generator, interval means of update statistics, and the
    acting tf.functions (sampling by Gumbel-max, greedy). jit_compile: every call of the model,
    and the scans of a rollout's returns and advantages, run XLA-compiled
    (common/learners/xla.py). acting_model: a second model of the same architecture that
    lagged_act() samples from, with a generator of its own, holding the parameters sync_acting()
    last copied: updates can then run while the samplers act (OverlapConfig.overlap_learning);
    act() and everything else use the learner's own parameters."""

    def __init__(self, model, optimizer, settings, observation_spec, seed, update_stats, name,
                 jit_compile=False, acting_model=None):
        super().__init__(name=name)
        self.model = model
        self.jit_compile = jit_compile
        self.call_model = xla.compiled_call(lambda observations: model(observations), jit_compile)
        self.acting_model = acting_model
        self.call_acting_model = self.call_model if acting_model is None else \
            xla.compiled_call(lambda observations: acting_model(observations), jit_compile)
        # The rollouts' scans over time (a loop of tiny kernels on a GPU). Not GA3C's
        # sequence_returns: the shape of its layout depends on the values, which XLA cannot take.
        self.n_step_returns, self.generalized_advantage_estimation = (
            xla.compiled_call(scan, jit_compile)
            for scan in (losses.n_step_returns, losses.generalized_advantage_estimation))
        self.optimizer = optimizer
        self.settings = settings
        self.optimizer.build(self.model.trainable_variables)
        # Schedules over the run's environment steps (optim.EnvStepSchedule): the learning rate
        # if it has one, and any a subclass adds; set_env_steps moves them all.
        self.env_step_schedules = [optimizer.learning_rate]
        self.generator = tf.random.Generator.from_seed(seed)
        # Acting beside an update draws from its own stream (the update's shuffles use the other).
        self.acting_generator = self.generator if acting_model is None else \
            tf.random.Generator.from_seed(seed + ACTING_SEED_OFFSET)
        self.update_means = interval_means.IntervalMeans(update_stats)
        # What a checkpoint keeps beyond the model, optimizer and generator (a subclass adds).
        self.extra_trackables = {}
        # Built under a one-machine strategy: each replica acts for its own sampler groups.
        self.act = distribute.acting(distribute.current_strategy(), self._act,
                                     [observation_spec])
        self.greedy_act = tf.function(self._greedy_act, input_signature=[observation_spec])
        self.assign_parameters = tf.function(
            self._assign_parameters, input_signature=[tf.TensorSpec((None,), tf.float32)])
        if acting_model is not None:
            self.sync_acting = tf.function(self._sync_acting, input_signature=[])
            self.lagged_act = tf.function(self._lagged_act, input_signature=[observation_spec])
            self.sync_acting()

    def set_env_steps(self, env_steps):
        """Tells the learner's environment-step schedules where the run is (before an update),
        so a run resumed with another batch continues them where they were."""
        for schedule in self.env_step_schedules:
            if isinstance(schedule, optim.EnvStepSchedule):
                schedule.set_env_steps(env_steps)

    def _assign_parameters(self, flat):
        """The model's trainable variables from consecutive pieces of one flat vector, in one
        call: one host-to-device copy, not one per variable (asynchronous learners' pulls)."""
        variables = self.model.trainable_variables
        pieces = tf.split(flat, [variable.shape.num_elements() for variable in variables])
        for variable, piece in zip(variables, pieces):
            variable.assign(tf.reshape(piece, variable.shape))

    def _sync_acting(self):
        """The acting model's parameters (and non-trainable state, such as observation moments)
        from the learner's, in one call: no update half-read."""
        for acting, learning in zip(self.acting_model.variables, self.model.variables):
            acting.assign(learning)

    def _act(self, observations):
        logits, _ = self.call_model(observations)
        return sample_actions(logits, self.generator)

    def _lagged_act(self, observations):
        logits, _ = self.call_acting_model(observations)
        return sample_actions(logits, self.acting_generator)

    def _greedy_act(self, observations):
        logits, _ = self.call_model(observations)
        return tf.argmax(logits, axis=-1, output_type=tf.int32)


class ActorCriticLearner(PolicyLearner):
    """model(observations) -> (logits [N, A], values [N]); optimizer: optim.RMSProp (or
    anything with apply_gradients, build and current_learning_rate)."""

    def __init__(self, model, optimizer, settings, observation_spec, seed=0, horizon=None,
                 name='actor_critic_learner', jit_compile=False, acting_model=None,
                 reuse_activations=False):
        """reuse_activations: act_keeping_outputs() also returns the torso outputs it computed, and
        train_on_kept_outputs() takes them in place of a second forward pass over the rollout
        (common/learners/activation_reuse.py): the same update, for a rollout acted on with the
        parameters it trains."""
        if settings.reduction not in REDUCTIONS:
            raise ValueError(f'reduction={settings.reduction!r}; allowed: {REDUCTIONS}')
        if reuse_activations:
            _check_reuse(model, settings, horizon, jit_compile, acting_model)
        super().__init__(model, optimizer, settings, observation_spec, seed, UPDATE_STATS, name,
                         jit_compile, acting_model)
        self.reuses_activations = reuse_activations
        self.predict = tf.function(self._predict, input_signature=[observation_spec])
        self.train_on_sequences = tf.function(self._train_on_sequences,
                                              input_signature=sequence_signature(observation_spec))
        self.train_on_padded_sequences = tf.function(
            self._train_on_padded_sequences,
            input_signature=sequence_signature(observation_spec) + [
                tf.TensorSpec((), tf.int32)])
        self.flat_gradients = tf.function(self._flat_gradients,
                                          input_signature=sequence_signature(observation_spec))
        if horizon is not None:
            signature = rollout_signature(observation_spec, horizon)
            # Built under a tf.distribute scope: every replica trains on its share of the
            # rollout's environments (axis 1), as one update (common/scale/distribute.py).
            self.train_on_rollout = distribute.replicated(
                distribute.current_strategy(), self._train_on_rollout, (1, 1, 1, 1), signature)
            self.flat_rollout_gradients = tf.function(self._flat_rollout_gradients,
                                                      input_signature=signature)
        if reuse_activations:
            self.act_keeping_outputs = tf.function(self._act_keeping_outputs,
                                                   input_signature=[observation_spec])
            probe = model.scaled(tf.zeros((1,) + tuple(observation_spec.shape[1:]),
                                          observation_spec.dtype))
            kept = [tf.TensorSpec((None,) + tuple(output.shape[1:]), output.dtype)
                    for output in activation_reuse.stored_outputs(
                        model.torso, activation_reuse.run_layers(model.torso, probe))]
            self.train_on_kept_outputs = tf.function(
                self._train_on_kept_outputs,
                input_signature=rollout_signature(observation_spec, horizon) + [[kept] * horizon])

    def _predict(self, observations):
        logits, values = self.call_model(observations)
        return tf.nn.softmax(logits), values

    def _objective(self, observations, actions, returns, weights=None):
        """(what is differentiated, the loss terms) for flat batches; weights (None: all 1)
        weigh the rows, 0 for padding (losses.actor_critic_loss)."""
        return self._objective_of(*self.call_model(observations), actions, returns, weights)

    def _objective_of(self, logits, values, actions, returns, weights=None):
        """_objective given the model's logits and values on the observations."""
        settings = self.settings
        if settings.gae_lambda is not None:
            returns = returns + tf.stop_gradient(values)  # returns held the GAE advantages
        loss = losses.actor_critic_loss(
            logits=logits, values=values, actions=actions, returns=returns,
            entropy_coef=settings.entropy_coef, value_loss_coef=settings.value_loss_coef,
            log_epsilon=settings.log_epsilon, weights=weights)
        objective = loss.total * settings.scale
        if settings.reduction == 'sum':
            rows = tf.shape(actions)[0] if weights is None else tf.reduce_sum(weights)
            objective = objective * tf.cast(rows, objective.dtype)
        return objective, loss

    def _gradients(self, observations, actions, returns, weights=None):
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            objective, loss = self._objective(observations, actions, returns, weights)
        return tape.gradient(objective, variables), loss

    def _apply(self, gradients, loss):
        stats = optim.apply_actor_critic_gradients(
            self.optimizer, gradients, self.model.trainable_variables, loss,
            self.settings.clip_norm, self.settings.reduction)
        self.update_means.add(stats)
        return stats

    def _train_on_returns(self, observations, actions, returns):
        """One update on a flat batch with its n-step returns; returns the update's stats."""
        return self._apply(*self._gradients(observations, actions, returns))

    def _train_on_sequences(self, observations, actions, rewards, sequence_ends, end_values):
        """One update on agents' sequences laid end to end (GA3C's trainers): each sequence's
        n-step returns bootstrap from its end value (0 after a terminal step)."""
        returns = losses.sequence_returns(rewards, sequence_ends, end_values, self.settings.gamma)
        return self._train_on_returns(observations, actions, returns)

    def _train_on_padded_sequences(self, observations, actions, rewards, sequence_ends,
                                   end_values, num_valid):
        """_train_on_sequences on the first num_valid rows of a batch padded to a fixed size
        (GA3C's bucketed batches, one input shape per bucket): the padding rows, one-step
        sequences after the last real one, weigh 0 in the loss, so the update is that of the
        real rows alone."""
        returns = losses.sequence_returns(rewards, sequence_ends, end_values, self.settings.gamma)
        weights = tf.cast(tf.range(tf.shape(actions)[0]) < num_valid, tf.float32)
        return self._apply(*self._gradients(observations, actions, returns, weights))

    def _flat_gradients(self, observations, actions, rewards, sequence_ends, end_values):
        """The clipped gradients of one agent's sequences as one flat vector, applied elsewhere
        (A3C-CPU's agents apply theirs to shared parameters)."""
        returns = losses.sequence_returns(rewards, sequence_ends, end_values, self.settings.gamma)
        gradients, _ = self._gradients(observations, actions, returns)
        return self._flatten_clipped(gradients)[0]

    def _flatten_clipped(self, gradients):
        """(gradients clipped to clip_norm by global norm, as one flat vector; the norm before)."""
        global_norm = tf.linalg.global_norm(gradients)
        if self.settings.clip_norm > 0:
            gradients, _ = tf.clip_by_global_norm(gradients, self.settings.clip_norm,
                                                  use_norm=global_norm)
        return tf.concat([tf.reshape(gradient, [-1]) for gradient in gradients], 0), global_norm

    def _flat_rollout_gradients(self, observations, actions, rewards, terminals):
        """The clipped flat gradient of a (horizon + 1, N) rollout's loss and the update's
        statistics but the learning rate, for an update applied elsewhere (the asynchronous
        learners' central store)."""
        targets = self.rollout_targets(observations, rewards, terminals)
        flat_observations = flat_steps(observations[:-1])
        gradients, loss = self._gradients(flat_observations, tf.reshape(actions, [-1]), targets)
        flat, global_norm = self._flatten_clipped(gradients)
        return flat, {'loss': loss.total, 'policy_loss': loss.policy_loss,
                      'value_loss': loss.value_loss, 'entropy': loss.entropy,
                      'grad_norm': global_norm}

    def rollout_targets(self, observations, rewards, terminals):
        """The flat policy/value targets of a (horizon + 1, N) rollout: n-step returns bootstrapped
        from V(observations[horizon]), or GAE advantages (the value is added back in the loss)."""
        settings = self.settings
        num_steps = tf.shape(rewards)[0]
        if settings.gae_lambda is None:
            # V(s_{horizon}) only: no forward or backward pass over rows that get no gradient.
            _, bootstrap = self.call_model(observations[-1])
            targets = self.n_step_returns(rewards, terminals, bootstrap, settings.gamma)
        else:
            _, values = self.call_model(flat_steps(observations))
            values = tf.reshape(values, [num_steps + 1, -1])
            targets = self.generalized_advantage_estimation(
                rewards, values[:-1], terminals, values[-1], settings.gamma,
                settings.gae_lambda)
        return tf.reshape(tf.stop_gradient(targets), [-1])

    def _train_on_rollout(self, observations, actions, rewards, terminals):
        """One update on horizon steps of N environments (PAAC's Algorithm 1, lines 12-19)."""
        targets = self.rollout_targets(observations, rewards, terminals)
        flat_observations = flat_steps(observations[:-1])
        return self._train_on_returns(flat_observations, tf.reshape(actions, [-1]), targets)

    def _act_keeping_outputs(self, observations):
        """act(), and the outputs of the torso's layers that the update can reuse
        (activation_reuse.stored_outputs)."""
        model = self.model
        outputs = activation_reuse.run_layers(model.torso, model.scaled(observations))
        actions = sample_actions(model.policy_head(outputs[-1]), self.generator)
        return actions, activation_reuse.stored_outputs(model.torso, outputs)

    def _train_on_kept_outputs(self, observations, actions, rewards, terminals, kept_steps):
        """_train_on_rollout with the torso outputs of the rollout's acting calls (kept_steps:
        for each step, what act_keeping_outputs returned with it) in place of a forward pass:
        the heads and the loss on the kept features, then the torso's backward pass alone."""
        model = self.model
        kept = [tf.concat(parts, 0) for parts in zip(*kept_steps)]  # step-major, as the rollout
        targets = self.rollout_targets(observations, rewards, terminals)
        inputs = model.scaled(flat_steps(observations[:-1]))
        outputs = activation_reuse.layer_outputs(model.torso, inputs, kept)
        features = outputs[-1]
        heads = model.policy_head.trainable_variables + model.value_head.trainable_variables
        with tf.GradientTape() as tape:
            tape.watch(features)
            objective, loss = self._objective_of(
                model.policy_head(features), tf.squeeze(model.value_head(features), axis=-1),
                tf.reshape(actions, [-1]), targets)
        head_gradients, features_gradient = tape.gradient(objective, [heads, features])
        found = activation_reuse.torso_gradients(model.torso, inputs, outputs, features_gradient)
        found.update((variable.ref(), gradient)
                     for variable, gradient in zip(heads, head_gradients))
        return self._apply([found[variable.ref()] for variable in model.trainable_variables],
                           loss)


def _check_reuse(model, settings, horizon, jit_compile, acting_model):
    """Raises ValueError unless the update can take the acting pass's outputs as its own."""
    if not all(hasattr(model, name) for name in ('torso', 'policy_head', 'value_head')):
        raise ValueError('reuse_activations needs an ActorCriticNetwork (torso and heads)')
    activation_reuse.check_torso(model.torso)
    for ok, why in ((horizon is not None, 'a rollout horizon'),
                    (settings.gae_lambda is None, 'n-step returns (gae_lambda None)'),
                    (not jit_compile, 'jit_compile off'),
                    (acting_model is None, 'no acting copy (no overlapped learning)'),
                    (getattr(model, 'observation_moments', None) is None,
                     'no observation standardization')):
        if not ok:
            raise ValueError(f'reuse_activations needs {why}')
