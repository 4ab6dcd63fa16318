"""GA3C's one model and its updates: the shared actor-critic learner
(common/learners/actor_critic.py) with eq. (5)'s loss (log(pi + epsilon)), summed over the batch
as the original code does, and the learning rate annealed over the run's environment steps."""
import tensorflow as tf

from common.learners import actor_critic
from common.learners import networks
from common.learners import optim


def observation_spec(config):
    return tf.TensorSpec((None,) + tuple(config.env_config.observation_shape),
                         tf.as_dtype(config.env_config.observation_dtype))


def train_signature(config, padded=False):
    """TensorSpecs of one experience batch: observations, actions, rewards, sequence ends, end
    values (actor_critic.sequence_signature), then the model versions that acted; padded: then
    the number of real rows (ga3c_tf/buckets.py pad_sequences)."""
    return tuple(actor_critic.sequence_signature(observation_spec(config))) + (
        tf.TensorSpec((None,), tf.int64),) + ((tf.TensorSpec((), tf.int32),) if padded else ())


def pads_batches(config):
    """Whether the server pads its prediction and training batches to buckets
    (ga3c_tf/buckets.py): GA3CConfig.pad_batches 'always', or 'auto' where TensorFlow sees a
    GPU (cuDNN autotunes per input shape there) or with jit_compile (XLA compiles per input
    shape); on a CPU without XLA the padding rows only cost time."""
    if config.pad_batches == 'auto':
        return config.jit_compile or bool(tf.config.list_physical_devices('GPU'))
    return config.pad_batches == 'always'


def loss_settings(config):
    return actor_critic.LossSettings(
        gamma=config.gamma, entropy_coef=config.entropy_coef,
        value_loss_coef=config.value_loss_coef, clip_norm=config.clip_norm,
        log_epsilon=config.log_epsilon, reduction=config.loss_reduction)


def build_learner(config):
    """The learner, with learner.env_steps: the run's env steps, set by the main loop, over
    which the learning rate is annealed."""
    model = networks.make_actor_critic(**config.model_kwargs())
    env_steps = tf.Variable(0, dtype=tf.int64, trainable=False, name='env_steps')
    schedule = config.learning_rate_schedule()
    optimizer = optim.rmsprop_of(config, lambda _: schedule(env_steps))
    learner = actor_critic.ActorCriticLearner(model, optimizer, loss_settings(config),
                                              observation_spec(config), seed=config.seed,
                                              name='ga3c_learner',
                                              jit_compile=config.jit_compile)
    learner.env_steps = env_steps
    return learner
