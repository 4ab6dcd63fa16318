"""The optimizers the papers' learners use: Adam (PPO), and RMSProp as the papers' TF1 code ran
it, with the epsilon placement and the starting mean squares as explicit options.

TF1's tf.train.RMSPropOptimizer (used by the PAAC and GA3C originals) divides by
sqrt(ms + epsilon) and starts ms at ones; tf.keras' RMSprop divides by sqrt(ms) + epsilon and
starts ms at zeros. With the papers' epsilon of 0.1 the placements give very different step
sizes, and zeros make the first updates up to 1/sqrt(epsilon) ~ 3x larger than ones, so both are
options here, set from each paper's config (common/launch/config.py RMSPropConfig).
"""
import tensorflow as tf

from common.run import scalars
from common.scale import distribute

__all__ = ('RMSProp', 'Adam', 'rmsprop_of', 'LinearSchedule', 'EnvStepSchedule', 'KLAdaptiveRate',
           'set_schedule_steps', 'apply_actor_critic_gradients')


class _SlotOptimizer(tf.Module):
    """What both optimizers share: a learning rate (a float or a callable of the update count,
    a tf.int64 tensor), the update count, and slot variables made once for one variable list."""

    def __init__(self, learning_rate, name):
        super().__init__(name=name)
        self.learning_rate = learning_rate
        # Under a tf.distribute strategy every replica increments it; the first one's counts.
        self.iterations = tf.Variable(0, dtype=tf.int64, trainable=False, name='iterations',
                                      aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
        self._built_for = None

    def _make_slots(self, variable, slot_name):
        raise NotImplementedError

    def _slots(self, index):
        """The slot variables of the index-th variable, in the order _apply_rule takes them."""
        raise NotImplementedError

    def _apply_rule(self, learning_rate):
        """fn(variable, gradient, *slots) applying one update to one variable (or one replica's
        copy of it) at learning_rate."""
        raise NotImplementedError

    def build(self, variables):
        """Creates the slot variables (eagerly, once) for these model variables."""
        if self._built_for is not None:
            return
        with tf.init_scope():
            for variable in variables:
                self._make_slots(variable, variable.name.replace(':', '_').replace('/', '_'))
        self._built_for = [id(variable) for variable in variables]

    def current_learning_rate(self):
        if callable(self.learning_rate):
            return tf.cast(self.learning_rate(self.iterations), tf.float32)
        return tf.constant(self.learning_rate, tf.float32)

    def apply_gradients(self, gradients, variables):
        """One update of every variable from its gradient; increments iterations."""
        self.build(variables)
        if [id(variable) for variable in variables] != self._built_for:
            raise ValueError(f'{type(self).__name__}.apply_gradients got a different variable '
                             'list than it was built for')
        slots = [self._slots(index) for index in range(len(variables))]
        distribute.apply_to_every_replica(lambda: self._apply_rule(self.current_learning_rate()),
                                          gradients, variables, slots)
        self.iterations.assign_add(1)


class _Untracked:
    """Variables a tf.Module neither checkpoints nor lists in .variables (not a list, which
    tf.Module would track)."""

    def __init__(self):
        self.variables = []


class RMSProp(_SlotOptimizer):
    """RMSProp (optionally centered) applying updates with TF's fused raw ops.

    initial_mean_square: where the mean squares start (TF1's RMSPropOptimizer: 1.0; tf.keras
    and DeepMind's DQN: 0.0). With momentum 0 (every preset's), the fused ops' moment holds
    only the last step, which no later update reads (moment = 0 * moment + step): it is kept
    out of checkpoints and .variables, so a checkpoint of centered RMSProp holds the weights and
    two slots, not three; a checkpoint written with it still restores (the value is unused).
    """

    def __init__(self, learning_rate, decay=0.99, epsilon=0.1, momentum=0.0, centered=False,
                 epsilon_inside_sqrt=True, initial_mean_square=1.0, name='rmsprop'):
        if not initial_mean_square >= 0:
            raise ValueError(f'RMSProp.initial_mean_square={initial_mean_square!r}; must be >= 0')
        super().__init__(learning_rate, name=name)
        self.initial_mean_square = float(initial_mean_square)
        self.decay = decay
        self.epsilon = epsilon
        self.momentum = momentum
        self.centered = centered
        self.epsilon_inside_sqrt = epsilon_inside_sqrt
        self._mean_square = []
        self._mean_grad = []
        self._moment = [] if momentum else None
        self._last_step = _Untracked()  # the moments at momentum 0

    def _make_slots(self, variable, slot_name):
        self._mean_square.append(tf.Variable(
            tf.fill(tf.shape(variable), tf.cast(self.initial_mean_square, variable.dtype)),
            trainable=False, name=f'ms_{slot_name}'))
        self._mean_grad.append(tf.Variable(tf.zeros_like(variable), trainable=False,
                                           name=f'mg_{slot_name}'))
        self._moments().append(tf.Variable(tf.zeros_like(variable), trainable=False,
                                           name=f'mom_{slot_name}'))

    def _moments(self):
        return self._moment if self.momentum else self._last_step.variables

    def _slots(self, index):
        return self._mean_square[index], self._mean_grad[index], self._moments()[index]

    def _apply_rule(self, learning_rate):
        if not self.epsilon_inside_sqrt:
            return lambda *args: self._apply_keras(learning_rate, *args)

        def apply_tf1(variable, gradient, mean_square, mean_grad, moment):
            kwargs = dict(var=variable.handle, ms=mean_square.handle, mom=moment.handle,
                          lr=learning_rate, rho=self.decay, momentum=self.momentum,
                          epsilon=self.epsilon, grad=gradient)
            if self.centered:
                tf.raw_ops.ResourceApplyCenteredRMSProp(mg=mean_grad.handle, **kwargs)
            else:
                tf.raw_ops.ResourceApplyRMSProp(**kwargs)

        return apply_tf1

    def _apply_keras(self, learning_rate, variable, gradient, mean_square, mean_grad, moment):
        mean_square.assign(self.decay * mean_square + (1.0 - self.decay) * tf.square(gradient))
        denominator = mean_square
        if self.centered:
            mean_grad.assign(self.decay * mean_grad + (1.0 - self.decay) * gradient)
            denominator = mean_square - tf.square(mean_grad)
        step = learning_rate * gradient / (tf.sqrt(denominator) + self.epsilon)
        moment.assign(self.momentum * moment + step)
        variable.assign_sub(moment)


class Adam(_SlotOptimizer):
    """Adam (Kingma & Ba 2014, the form Stooke & Abbeel's Appendix B writes out) with TF's fused
    op: a = r sqrt(1 - beta2^t) / (1 - beta1^t), m and v moving averages of g and g^2,
    theta -= a m / (sqrt(v) + epsilon)."""

    def __init__(self, learning_rate, beta1=0.9, beta2=0.999, epsilon=1e-8, name='adam'):
        super().__init__(learning_rate, name=name)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self._first_moment = []
        self._second_moment = []

    def _make_slots(self, variable, slot_name):
        self._first_moment.append(tf.Variable(tf.zeros_like(variable), trainable=False,
                                              name=f'm_{slot_name}'))
        self._second_moment.append(tf.Variable(tf.zeros_like(variable), trainable=False,
                                               name=f'v_{slot_name}'))

    def _slots(self, index):
        return self._first_moment[index], self._second_moment[index]

    def _apply_rule(self, learning_rate):
        step = tf.cast(self.iterations + 1, tf.float32)
        beta1_power = tf.pow(tf.constant(self.beta1, tf.float32), step)
        beta2_power = tf.pow(tf.constant(self.beta2, tf.float32), step)

        def apply_adam(variable, gradient, first_moment, second_moment):
            tf.raw_ops.ResourceApplyAdam(
                var=variable.handle, m=first_moment.handle, v=second_moment.handle,
                beta1_power=beta1_power, beta2_power=beta2_power, lr=learning_rate,
                beta1=self.beta1, beta2=self.beta2, epsilon=self.epsilon, grad=gradient)

        return apply_adam


def rmsprop_of(config, learning_rate):
    """The RMSProp a paper's config describes (common.launch.config.RMSPropConfig's fields);
    learning_rate: a float or a callable of the update count."""
    return RMSProp(learning_rate=learning_rate, decay=config.rmsprop_decay,
                   epsilon=config.rmsprop_epsilon,
                   epsilon_inside_sqrt=config.rmsprop_epsilon_inside_sqrt,
                   initial_mean_square=config.rmsprop_initial_mean_square,
                   centered=config.rmsprop_centered)


class LinearSchedule:
    """Linear interpolation from `initial` to `final` over `duration` updates, then constant."""

    def __init__(self, initial, final=0.0, duration=1):
        if duration <= 0:
            raise ValueError(f'LinearSchedule duration must be > 0, got {duration}')
        self.initial = float(initial)
        self.final = float(final)
        self.duration = int(duration)

    def __call__(self, step):
        fraction = tf.minimum(tf.cast(step, tf.float64) / self.duration, 1.0)
        return self.initial + fraction * (self.final - self.initial)

    def value_at(self, step):
        """The same value as a Python float, for callers outside TensorFlow (no TF ops, and
        no Python number converted to a tensor, see common/run/scalars.py)."""
        fraction = min(step / self.duration, 1.0)
        return self.initial + fraction * (self.final - self.initial)


class EnvStepSchedule:
    """A learning-rate schedule over the run's environment steps rather than its updates: the
    optimizer calls it with its update count, which it ignores, and the loop sets the steps
    (set_schedule_steps) before each update, so a run resumed with another batch (num_envs,
    horizon) continues the schedule where it was. The steps are not checkpointed: the loop sets
    them from its own counters."""

    def __init__(self, schedule):
        self.schedule = schedule
        with tf.init_scope():
            self.env_steps = tf.Variable(0, dtype=tf.int64, trainable=False,
                                         name='schedule_env_steps')

    def __call__(self, updates):
        del updates
        return self.schedule(self.env_steps)

    def set_env_steps(self, env_steps):
        """Where the run is, before an update: a new count each time, so not as a Python int,
        of which TensorFlow would keep a tensor per value (common/run/scalars.py)."""
        scalars.assign(self.env_steps, env_steps)


class KLAdaptiveRate(tf.Module):
    """A learning rate steered by the policy's change (rl_games' AdaptiveScheduler,
    rl_games/common/schedulers.py, applied after every minibatch as its 'legacy' schedule_type
    does): after a step whose KL estimate is above 2 x kl_target the rate is divided by 1.5 (not
    below minimum), below kl_target / 2 multiplied by 1.5 (not above maximum). The rate is a
    variable, so a checkpoint keeps it and a resumed run goes on from where it was."""

    FACTOR = 1.5

    def __init__(self, initial, kl_target, minimum=1e-6, maximum=1e-2, name='kl_adaptive_rate'):
        super().__init__(name=name)
        if not kl_target > 0:
            raise ValueError(f'KLAdaptiveRate kl_target={kl_target!r}; must be > 0')
        if not 0 < minimum <= initial <= maximum:
            raise ValueError(f'KLAdaptiveRate initial={initial!r}; must be in [minimum={minimum!r}, '
                             f'maximum={maximum!r}], with minimum > 0')
        self.kl_target = float(kl_target)
        self.minimum = float(minimum)
        self.maximum = float(maximum)
        with tf.init_scope():
            self.rate = tf.Variable(float(initial), dtype=tf.float32, trainable=False,
                                    name='learning_rate')

    def __call__(self, updates):
        del updates
        return self.rate.read_value()

    def adapt(self, kl):
        """The rate of the next step, after a step whose KL estimate was kl."""
        rate = self.rate.read_value()
        kl = tf.cast(kl, tf.float32)
        rate = tf.where(kl > 2.0 * self.kl_target, tf.maximum(rate / self.FACTOR, self.minimum),
                        rate)
        rate = tf.where(kl < 0.5 * self.kl_target, tf.minimum(rate * self.FACTOR, self.maximum),
                        rate)
        return self.rate.assign(rate)


def set_schedule_steps(optimizer, env_steps):
    """Tells optimizer's EnvStepSchedule (if it has one) where the run is."""
    if isinstance(optimizer.learning_rate, EnvStepSchedule):
        optimizer.learning_rate.set_env_steps(env_steps)


def apply_actor_critic_gradients(optimizer, gradients, variables, loss, clip_norm,
                                 reduction='mean'):
    """Clips gradients to clip_norm by global norm (0: no clipping), applies them, and returns
    the statistics both actor-critic papers log: loss terms, the global norm before clipping and
    the learning rate of this update. Under a tf.distribute strategy the gradients are first
    averaged over the replicas (summed for a loss summed over its batch: reduction 'sum';
    common/scale/distribute.py), so the clipping sees the whole batch's."""
    gradients = distribute.mean_across_replicas(gradients, reduction)
    global_norm = tf.linalg.global_norm(gradients)
    if clip_norm > 0:
        gradients, _ = tf.clip_by_global_norm(gradients, clip_norm, use_norm=global_norm)
    learning_rate = optimizer.current_learning_rate()
    optimizer.apply_gradients(gradients, variables)
    return {'loss': loss.total, 'policy_loss': loss.policy_loss, 'value_loss': loss.value_loss,
            'entropy': loss.entropy, 'grad_norm': global_norm, 'learning_rate': learning_rate}
