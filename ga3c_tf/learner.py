"""GA3C's configuration and its one model: the predict and train tf.functions (eq. 5 loss)."""
import dataclasses
from typing import Any, Optional

import gin
import tensorflow as tf

from common import app
from common import interval_means
from common import losses
from common import networks
from common import optim
# Registers AtariConfig and GymConfig with gin, which the presets bind before any env exists.
from common.envs import atari  # noqa: F401
from common.envs import gym as gym_envs  # noqa: F401

ALGORITHMS = ('ga3c', 'a3c_cpu')
# Per-update statistics of the trainers, logged as means over each log interval.
UPDATE_STATS = ('loss', 'policy_loss', 'value_loss', 'entropy', 'grad_norm', 'learning_rate')
TRAINER_INPUTS = ('direct', 'tf_data')
ON_AGENT_DEATH = ('stop', 'replace')


@gin.configurable
@dataclasses.dataclass
class GA3CConfig:
    """Every GA3C knob; defaults are the original code's Config.py (gin/ga3c/*.gin cite them)."""
    env_config: Any = None               # @AtariConfig() or @GymConfig()
    algorithm: str = 'ga3c'              # 'ga3c', or 'a3c_cpu': the paper's CPU baseline
    num_agents: int = 32                 # NA (AGENTS)
    num_predictors: int = 2              # NP (PREDICTORS)
    num_trainers: int = 2                # NT (TRAINERS)
    max_agents: int = 128                # upper bounds of the dynamic adjustment
    max_predictors: int = 8
    max_trainers: int = 8
    dynamic_settings: bool = True        # anneal NP/NT/NA (DYNAMIC_SETTINGS)
    dynamic_initial_wait_seconds: float = 10.0
    dynamic_interval_seconds: float = 20.0
    t_max: int = 5                       # TIME_MAX
    gamma: float = 0.99                  # DISCOUNT
    prediction_queue_size: int = 100     # MAX_QUEUE_SIZE
    training_queue_size: int = 100       # MAX_QUEUE_SIZE
    prediction_batch_size: int = 128     # PREDICTION_BATCH_SIZE
    training_min_batch_size: int = 0     # TRAINING_MIN_BATCH_SIZE (0: one agent's batch)
    trainer_input: str = 'direct'        # 'direct' or 'tf_data' (measured, see the note)
    network: str = 'nips'
    torso_kwargs: Optional[dict] = None  # e.g. {'first_stride': 2} for 'ga3c_large'
    conv_padding: str = 'same'           # NetworkVP.py's conv2d_layer pads ('SAME')
    initializer: str = 'fan_in_uniform'  # NetworkVP.py: weights and biases U(+-1/sqrt(fan_in))
    input_scale: float = 1 / 128         # x / 128 - 1 as in the original code
    input_offset: float = -1.0
    learning_rate: float = 3e-4          # LEARNING_RATE_START
    final_learning_rate: Optional[float] = None  # LEARNING_RATE_END (None: constant) ...
    anneal_steps: Optional[int] = None   # ... reached linearly after this many env steps
    rmsprop_decay: float = 0.99
    rmsprop_epsilon: float = 0.1
    entropy_coef: float = 0.01           # BETA_START = BETA_END
    value_loss_coef: float = 0.5         # cost_v = 0.5 * sum((R - V)^2)
    log_epsilon: float = 1e-6            # LOG_EPSILON, eq. (5)
    loss_reduction: str = 'sum'          # the original sums over the batch; 'mean' averages
    clip_norm: float = 0.0               # USE_GRAD_CLIP=False; 40 when on
    total_steps: int = 50_000_000
    seed: int = 0
    on_agent_death: str = 'stop'         # 'stop' ends the run; 'replace' starts a new agent
    a3c_onednn: bool = False             # A3C-CPU agents' TF kernels: stock (faster at batch 1)
    log_every_seconds: float = 10.0
    checkpoint_every_steps: int = 1_000_000

    def validate(self):
        """Raises ConfigError naming the first out-of-range value."""
        require = app.require
        app.require_field_types('GA3CConfig', self)
        app.require_env_config('GA3CConfig', self.env_config)
        optim.require_rmsprop_bindings('GA3CConfig')
        for name, allowed in (('algorithm', ALGORITHMS), ('trainer_input', TRAINER_INPUTS),
                              ('on_agent_death', ON_AGENT_DEATH),
                              ('loss_reduction', ('sum', 'mean'))):
            value = getattr(self, name)
            require(value in allowed, f'GA3CConfig.{name}={value!r}; allowed: {allowed}')
        app.require_positive_ints('GA3CConfig', self, ('num_agents', 'num_predictors', 'num_trainers', 'max_agents',
                     'max_predictors', 'max_trainers', 't_max', 'prediction_queue_size',
                     'training_queue_size', 'prediction_batch_size', 'total_steps',
                     'checkpoint_every_steps'))
        for name in ('agents', 'predictors', 'trainers'):
            value, bound = getattr(self, f'num_{name}'), getattr(self, f'max_{name}')
            require(value <= bound, f'GA3CConfig.num_{name}={value} exceeds '
                                    f'max_{name}={bound}')
        require(self.max_agents < 1 << 16,
                f'GA3CConfig.max_agents={self.max_agents} must be < 65536')
        require(isinstance(self.training_min_batch_size, int)
                and self.training_min_batch_size >= 0,
                f'GA3CConfig.training_min_batch_size must be an int >= 0, '
                f'got {self.training_min_batch_size!r}')
        require(self.network in networks.NETWORK_NAMES,
                f'GA3CConfig.network={self.network!r}; allowed: '
                f'{sorted(networks.NETWORK_NAMES)}')
        if self.network == 'ga3c_large':
            stride = (self.torso_kwargs or {}).get('first_stride', 4)
            require(stride in (1, 2, 3, 4),
                    f'GA3CConfig.torso_kwargs first_stride={stride!r}; allowed: 1, 2, 3, 4')
        require(self.conv_padding in networks.PADDINGS,
                f'GA3CConfig.conv_padding={self.conv_padding!r}; allowed: {networks.PADDINGS}')
        require(self.initializer in networks.INITIALIZERS,
                f'GA3CConfig.initializer={self.initializer!r}; allowed: {networks.INITIALIZERS}')
        require(0 < self.gamma <= 1, f'GA3CConfig.gamma must be in (0, 1], got {self.gamma}')
        for name in ('learning_rate', 'rmsprop_epsilon', 'log_every_seconds',
                     'dynamic_interval_seconds'):
            value = getattr(self, name)
            require(value > 0, f'GA3CConfig.{name} must be > 0, got {value!r}')
        for name in ('entropy_coef', 'value_loss_coef', 'log_epsilon', 'clip_norm',
                     'dynamic_initial_wait_seconds'):
            value = getattr(self, name)
            require(value >= 0, f'GA3CConfig.{name} must be >= 0, got {value!r}')
        require(self.final_learning_rate is None or self.final_learning_rate >= 0,
                f'GA3CConfig.final_learning_rate must be >= 0 or None, '
                f'got {self.final_learning_rate!r}')
        require(self.anneal_steps is None or (isinstance(self.anneal_steps, int)
                                              and self.anneal_steps > 0),
                f'GA3CConfig.anneal_steps must be a positive integer or None, '
                f'got {self.anneal_steps!r}')
        require(isinstance(self.a3c_onednn, bool),
                f'GA3CConfig.a3c_onednn must be True or False, got {self.a3c_onednn!r}')
        require(0 < self.rmsprop_decay < 1,
                f'GA3CConfig.rmsprop_decay must be in (0, 1), got {self.rmsprop_decay}')

    def model_kwargs(self):
        """Arguments of networks.make_actor_critic, explicit so that other processes can rebuild
        the model without the gin config."""
        env_config = self.env_config
        torso_kwargs = dict(self.torso_kwargs or {})
        if self.network in networks.IMAGE_NETWORKS:
            torso_kwargs.setdefault('padding', self.conv_padding)
        return dict(num_actions=env_config.num_actions(),
                    observation_shape=tuple(env_config.observation_shape),
                    observation_dtype=env_config.observation_dtype, network=self.network,
                    input_scale=self.input_scale, input_offset=self.input_offset,
                    torso_kwargs=torso_kwargs, initializer=self.initializer, seed=self.seed)

    def learning_rate_schedule(self):
        """Env steps -> learning rate: linear from learning_rate to final_learning_rate."""
        final = self.learning_rate if self.final_learning_rate is None else \
            self.final_learning_rate
        return optim.LinearSchedule(self.learning_rate, final,
                                    self.anneal_steps or self.total_steps)


def observation_spec(config):
    return tf.TensorSpec((None,) + tuple(config.env_config.observation_shape),
                         tf.as_dtype(config.env_config.observation_dtype))


def train_signature(config):
    """TensorSpecs of one experience batch: observations, actions, returns, versions."""
    return (observation_spec(config), tf.TensorSpec((None,), tf.int32),
            tf.TensorSpec((None,), tf.float32), tf.TensorSpec((None,), tf.int64))


class GA3CLearner(tf.Module):
    """The one GA3C model, its RMSProp, and the hot-path tf.functions (fixed signatures)."""

    def __init__(self, config):
        super().__init__(name='ga3c_learner')
        self.config = config
        self.model = networks.make_actor_critic(**config.model_kwargs())
        # The run's env steps, set by the main loop; the learning rate is annealed over them.
        self.env_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name='env_steps')
        schedule = config.learning_rate_schedule()
        self.optimizer = optim.RMSProp(
            learning_rate=lambda _: schedule(self.env_steps), decay=config.rmsprop_decay,
            epsilon=config.rmsprop_epsilon)
        self.optimizer.build(self.model.trainable_variables)
        self.generator = tf.random.Generator.from_seed(config.seed)
        self.update_means = interval_means.IntervalMeans(UPDATE_STATS)
        spec = observation_spec(config)
        self.predict = tf.function(self._predict, input_signature=[spec])
        self.train_step = tf.function(self._train_step, input_signature=list(
            train_signature(config)[:3]))
        self.act = tf.function(self._act, input_signature=[spec])
        self.greedy_act = tf.function(self._greedy_act, input_signature=[spec])

    def _predict(self, observations):
        logits, values = self.model(observations)
        return tf.nn.softmax(logits), values

    def _act(self, observations):
        """Samples from the policy (Gumbel-max on a seeded generator), for evaluation."""
        logits, _ = self.model(observations)
        uniform = self.generator.uniform(tf.shape(logits), minval=1e-20, maxval=1.0)
        return tf.argmax(logits - tf.math.log(-tf.math.log(uniform)), axis=-1,
                         output_type=tf.int32)

    def _greedy_act(self, observations):
        logits, _ = self.model(observations)
        return tf.argmax(logits, axis=-1, output_type=tf.int32)

    def _train_step(self, observations, actions, returns):
        """One RMSProp update on eq. (5) over the batch, summed as the original code does."""
        config = self.config
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            logits, values = self.model(observations)
            loss = losses.actor_critic_loss(
                logits=logits, values=values, actions=actions, returns=returns,
                entropy_coef=config.entropy_coef, value_loss_coef=config.value_loss_coef,
                log_epsilon=config.log_epsilon)
            objective = loss.total
            if config.loss_reduction == 'sum':
                objective = objective * tf.cast(tf.shape(actions)[0], tf.float32)
        gradients = tape.gradient(objective, variables)
        stats = optim.apply_actor_critic_gradients(self.optimizer, gradients, variables, loss,
                                                   config.clip_norm)
        self.update_means.add(stats)
        return stats
