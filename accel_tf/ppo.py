"""PPO's learner (Schulman et al. 2017, clipped objective) on a (T + 1, N) rollout: GAE
advantages, then epochs x minibatches gradient steps on shuffled slices of the batch, all in one
tf.function call (Stooke & Abbeel, section 4: "4 gradient updates per epoch, and 4 epochs per
optimization").

The sampling policy's log-probabilities are computed at the start of the call, from the same
parameters that sampled the rollout: with a synchronous sampler nothing changes in between.

The minibatches are gathered from the batch on the device: uint8 frames are packed 4 bytes to an
int32 first (packed_rows), since TensorFlow registers no GPU kernel for a uint8 gather.
"""
import dataclasses
import math
from typing import Optional

import tensorflow as tf

from common.learners import actor_critic
from common.learners import losses
from common.learners import optim
from common.learners import running_moments
from common.scale import distribute

UPDATE_STATS = ('loss', 'policy_loss', 'value_loss', 'entropy', 'grad_norm', 'learning_rate',
                'ratio_clip', 'clip_fraction', 'approx_kl', 'approx_kl_k2')
# What flat_minibatch_gradients appends to the flat gradient, in this order.
MINIBATCH_STATS = ('loss', 'policy_loss', 'value_loss', 'entropy', 'grad_norm', 'ratio_clip',
                   'clip_fraction', 'approx_kl')


def packed_rows(observations):
    """A batch of observations [B, ...] in a dtype with a GPU gather kernel: uint8 frames as
    int32 rows [B, ceil(n / 4)] holding 4 of a frame's n bytes each (zero bytes pad n to a
    multiple of 4); other dtypes as they are. TensorFlow registers GPU GatherV2 kernels for
    int32 but not uint8, so a uint8 gather would run on the host, a device round trip per
    minibatch. A bitcast and reshapes copy nothing: the packed batch takes no more memory."""
    if observations.dtype != tf.uint8:
        return observations
    size = math.prod(observations.shape[1:])  # static: the frame shape of the signature
    flat = tf.reshape(observations, [-1, size])
    padding = -size % 4
    if padding:  # e.g. 3 x 5 x 2 frames; Atari's 84x84 and 104x80 stacks need none
        flat = tf.pad(flat, [[0, 0], [0, padding]])
    return tf.bitcast(tf.reshape(flat, [-1, (size + padding) // 4, 4]), tf.int32)


def packed_spec(observation_spec):
    """The TensorSpec of packed_rows(a batch of observation_spec)."""
    if observation_spec.dtype != tf.uint8:
        return observation_spec
    return tf.TensorSpec((None, -(-math.prod(observation_spec.shape[1:]) // 4)), tf.int32)


def unpacked_rows(rows, frame_shape, dtype):
    """packed_rows undone on (gathered) rows: the frames [B, *frame_shape] of dtype, bit for
    bit."""
    if dtype != tf.uint8:
        return rows
    size = math.prod(frame_shape)
    flat = tf.reshape(tf.bitcast(rows, tf.uint8), [-1, rows.shape[1] * 4])[:, :size]
    return tf.reshape(flat, [-1, *frame_shape])


@dataclasses.dataclass(frozen=True)
class PPOSettings:
    """What one PPO optimization phase does; anneal_steps: environment steps over which the
    ratio clip decays linearly to 0 (None: constant), as the learning rate does (rlpyt's PPO
    scales both by the same 1 - iteration / iterations); kl_target: above 0, the learning rate
    (an optim.KLAdaptiveRate) is adapted after every minibatch step to keep approx_kl_k2 near it
    (rl_games' adaptive schedule; not in PPO's paper); normalize_values: the value head predicts
    returns standardized by their running moments (rl_games' normalize_value)."""
    gamma: float
    gae_lambda: float
    ratio_clip: float
    entropy_coef: float
    value_loss_coef: float
    epochs: int
    minibatches: int
    clip_norm: float = 0.0
    normalize_advantages: bool = False
    anneal_steps: Optional[int] = None
    kl_target: float = 0.0
    normalize_values: bool = False


class PPOLearner(actor_critic.PolicyLearner):
    """model(observations) -> (logits [N, A], values [N]); optimizer: optim.Adam (or anything
    with apply_gradients, build, iterations and current_learning_rate)."""

    def __init__(self, model, optimizer, settings, observation_spec, horizon, seed=0,
                 name='ppo_learner', jit_compile=False, acting_model=None):
        super().__init__(model, optimizer, settings, observation_spec, seed, UPDATE_STATS, name,
                         jit_compile, acting_model)
        self.ratio_clip_schedule = None if not settings.anneal_steps else optim.EnvStepSchedule(
            optim.LinearSchedule(settings.ratio_clip, 0.0, settings.anneal_steps))
        self.env_step_schedules.append(self.ratio_clip_schedule)
        self.adaptive_rate = None
        if settings.kl_target > 0:
            if not isinstance(optimizer.learning_rate, optim.KLAdaptiveRate):
                raise ValueError(f'PPOSettings.kl_target={settings.kl_target!r} needs an '
                                 'optimizer whose learning_rate is an optim.KLAdaptiveRate, got '
                                 f'{type(optimizer.learning_rate).__name__}')
            self.adaptive_rate = optimizer.learning_rate
        # The model's observation moments (networks.make_actor_critic's
        # standardize_observations), updated by every minibatch it trains on, as rl_games does.
        self.observation_moments = getattr(model, 'observation_moments', None)
        self.value_moments = None
        if settings.normalize_values:
            self.value_moments = running_moments.RunningMoments()
            self.extra_trackables['value_moments'] = self.value_moments
        self.frame_shape = tuple(observation_spec.shape[1:])
        self.frame_dtype = observation_spec.dtype
        # Built under a tf.distribute strategy's scope: each minibatch step runs on every
        # replica with its share of the minibatch (common/scale/distribute.py).
        self.strategy = distribute.current_strategy()
        signature = actor_critic.rollout_signature(observation_spec, horizon)
        self.train_on_rollout = tf.function(self._train_on_rollout, input_signature=signature)
        # APPO's pieces: the local steps are applied elsewhere (accel_tf/async_adam.py).
        self.act_with_log_probs = tf.function(self._act_with_log_probs,
                                              input_signature=[observation_spec])
        self.sampled_rollout_targets = tf.function(
            self._sampled_rollout_targets,
            input_signature=signature + [tf.TensorSpec((horizon, None), tf.float32)])
        flat = tf.TensorSpec((None,), tf.float32)
        indices = tf.TensorSpec((None,), tf.int32)
        self.flat_minibatch_gradients = tf.function(
            self._flat_minibatch_gradients,
            input_signature=[packed_spec(observation_spec), indices, flat, flat, flat, indices])

    def current_ratio_clip(self):
        """The ratio clip of the next gradient step (annealed by the run's environment steps,
        which set_env_steps gives)."""
        if self.ratio_clip_schedule is None:
            return tf.constant(self.settings.ratio_clip, tf.float32)
        return tf.cast(self.ratio_clip_schedule(None), tf.float32)

    def rollout_targets(self, observations, actions, rewards, terminals):
        """Flat (observations, actions, sampling log-probabilities, GAE advantages, returns)
        of a (T + 1, N) rollout; returns = advantages + V, the value targets (standardized, and
        their running moments updated, with normalize_values)."""
        settings = self.settings
        num_steps = tf.shape(rewards)[0]
        flat_all = actor_critic.flat_steps(observations)
        logits, values = self.call_model(flat_all)
        values = tf.reshape(values, [num_steps + 1, -1])
        if self.value_moments is not None:  # the head's standardized values in returns' units
            values = self.value_moments.unstandardize(values)
        advantages = self.generalized_advantage_estimation(
            rewards, values[:-1], terminals, values[-1], settings.gamma, settings.gae_lambda)
        returns = advantages + values[:-1]
        if self.value_moments is not None:  # as rl_games: the values, then the returns
            self.value_moments.update(values[:-1])
            self.value_moments.update(returns)
            returns = self.value_moments.standardize(returns)
        batch = tf.size(actions)
        flat_actions = tf.reshape(actions, [-1])
        old_log_probs = losses.select(tf.nn.log_softmax(logits[:batch]), flat_actions)
        return (flat_all[:batch], flat_actions, tf.stop_gradient(old_log_probs),
                tf.stop_gradient(tf.reshape(advantages, [-1])),
                tf.stop_gradient(tf.reshape(returns, [-1])))

    def _minibatch_gradients(self, observations, actions, old_log_probs, advantages, returns):
        """(gradients clipped by global norm, statistics but the learning rate) of the clipped
        objective on a minibatch."""
        settings = self.settings
        if settings.normalize_advantages:
            mean, variance = tf.nn.moments(advantages, axes=[0])
            advantages = (advantages - mean) / (tf.sqrt(variance) + 1e-8)
        ratio_clip = self.current_ratio_clip()
        with tf.GradientTape() as tape:
            logits, values = self.call_model(observations)
            loss = losses.ppo_clip_loss(
                logits=logits, values=values, actions=actions, old_log_probs=old_log_probs,
                advantages=advantages, returns=returns, ratio_clip=ratio_clip,
                entropy_coef=settings.entropy_coef, value_loss_coef=settings.value_loss_coef)
        gradients = distribute.mean_across_replicas(
            tape.gradient(loss.total, self.model.trainable_variables))
        global_norm = tf.linalg.global_norm(gradients)
        if settings.clip_norm > 0:
            gradients, _ = tf.clip_by_global_norm(gradients, settings.clip_norm,
                                                  use_norm=global_norm)
        stats = {'loss': loss.total, 'policy_loss': loss.policy_loss,
                 'value_loss': loss.value_loss, 'entropy': loss.entropy,
                 'grad_norm': global_norm, 'ratio_clip': ratio_clip,
                 'clip_fraction': loss.clip_fraction, 'approx_kl': loss.approx_kl,
                 'approx_kl_k2': loss.approx_kl_k2}
        return gradients, stats

    def minibatch_step(self, observations, actions, old_log_probs, advantages, returns):
        """One clipped-objective gradient step on a minibatch (after its observations update
        the model's observation moments, if it has them); returns its statistics."""
        if self.observation_moments is not None:
            self.observation_moments.update(self.model.scaled(observations))
        gradients, stats = self._minibatch_gradients(observations, actions, old_log_probs,
                                                     advantages, returns)
        stats['learning_rate'] = self.optimizer.current_learning_rate()
        self.optimizer.apply_gradients(gradients, self.model.trainable_variables)
        self.update_means.add(stats)
        return stats

    def _flat_minibatch_gradients(self, packed_observations, actions, old_log_probs,
                                  advantages, returns, picked):
        """APPO's minibatch step: the rows picked of a sampled_rollout_targets batch, gathered
        where the batch is (on the device), and their clipped gradient followed by the
        MINIBATCH_STATS, as one flat float32 vector: one copy to the host per minibatch."""
        data = [tf.gather(tensor, picked) for tensor in (
            packed_observations, actions, old_log_probs, advantages, returns)]
        data[0] = unpacked_rows(data[0], self.frame_shape, self.frame_dtype)
        gradients, stats = self._minibatch_gradients(*data)
        return tf.concat([tf.reshape(gradient, [-1]) for gradient in gradients] +
                         [tf.stack([tf.cast(stats[name], tf.float32)
                                    for name in MINIBATCH_STATS])], 0)

    def _act_with_log_probs(self, observations):
        """Sampled actions and their log-probabilities under the acting parameters (APPO's
        parameters change during sampling, so the ratio's denominator is recorded here)."""
        logits, _ = self.call_model(observations)
        actions = actor_critic.sample_actions(logits, self.generator)
        return actions, losses.select(tf.nn.log_softmax(logits), actions)

    def _sampled_rollout_targets(self, observations, actions, rewards, terminals,
                                 sampled_log_probs):
        """rollout_targets with the log-probabilities recorded while sampling, the frames
        packed (packed_rows) for flat_minibatch_gradients to gather on the device."""
        data = self.rollout_targets(observations, actions, rewards, terminals)
        return (packed_rows(data[0]), data[1], tf.reshape(sampled_log_probs, [-1])) + data[3:]

    def _train_on_rollout(self, observations, actions, rewards, terminals):
        """epochs passes over the batch, each in minibatches of a fresh shuffle; returns the
        last step's statistics."""
        settings = self.settings
        data = self.rollout_targets(observations, actions, rewards, terminals)
        data = (packed_rows(data[0]),) + data[1:]  # gathered on the device (packed_rows)
        batch = tf.size(actions)
        minibatch = batch // settings.minibatches
        last = {name: tf.constant(0.0) for name in UPDATE_STATS}
        for _ in tf.range(settings.epochs):
            order = tf.argsort(self.generator.uniform([batch]))
            for index in tf.range(settings.minibatches):
                picked = order[index * minibatch:(index + 1) * minibatch]
                minibatch_data = [tf.gather(tensor, picked) for tensor in data]
                minibatch_data[0] = unpacked_rows(minibatch_data[0], self.frame_shape,
                                                  self.frame_dtype)
                if self.strategy is None:
                    stats = self.minibatch_step(*minibatch_data)
                else:
                    stats = distribute.run_split(self.strategy, self.minibatch_step,
                                                 minibatch_data, (0,) * len(minibatch_data))
                if self.adaptive_rate is not None:  # after the step, as rl_games does
                    self.adaptive_rate.adapt(stats['approx_kl_k2'])
                last = {name: tf.cast(stats[name], tf.float32) for name in UPDATE_STATS}
        return last
