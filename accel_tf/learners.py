"""The learner builder of each update kind (accel_tf/algorithms.py UPDATES; accel_tf/kinds.py
selects one by the row), from an AccelConfig (the network, the optimizer with the (scaled,
optionally annealed) learning rate, and the update), and the environment pool its sampler steps."""
import tensorflow as tf

from accel_tf import ppo
from accel_tf import sections
from common.envs import pools
from common.launch import config as config_lib
from common.learners import actor_critic
from common.learners import networks
from common.learners import optim
from common.learners import q_learner


def open_pool(config, seed, learner_index=0):
    """The worker processes of config's sampler (two groups for the alternating one), for each
    replica of a one-machine mirrored run; with pin_cpus, learner learner_index's workers pin to
    the CPUs after those of the learners before it (A3C and APPO open a pool per learner)."""
    return pools.make_pool(config.env_config, config.num_envs, seed=seed,
                           num_workers=config.num_workers,
                           num_groups=config_lib.sampler_groups(config.sampler, config.distribute),
                           pin_cpus=config.pin_cpus,
                           first_cpu=learner_index * config.num_workers if config.pin_cpus else 0)


def make_optimizer(config):
    """RMSProp (config's RMSPropConfig fields) or Adam, at config.scaled_learning_rate,
    annealed linearly to 0 over the run's total_steps environment steps if
    config.anneal_learning_rate (so a resume with another batch continues it where it was), or
    adapted to PPO's KL if PPOConfig.kl_target is above 0."""
    rate = config.scaled_learning_rate
    if config.ppo is not None and config.ppo.kl_target > 0:
        rate = optim.KLAdaptiveRate(rate, config.ppo.kl_target, *sections.KL_ADAPTIVE_RANGE)
    elif config.anneal_learning_rate:
        rate = optim.EnvStepSchedule(optim.LinearSchedule(rate, 0.0, config.total_steps))
    if config.optimizer == 'adam':
        return optim.Adam(rate, beta1=config.adam_beta1, beta2=config.adam_beta2,
                          epsilon=config.adam_epsilon)
    return optim.rmsprop_of(config, rate)


def _acting_model(config):
    """The acting copy of the model an overlapped run samples with (None otherwise)."""
    return _model(config) if config.overlap_learning else None


def _model(config):
    return networks.actor_critic_for(
        config.env_config, config.network, config.initializer, config.seed,
        torso_kwargs=config.torso_kwargs, compute_dtype=config.compute_dtype,
        standardize_observations=config.ppo is not None and config.ppo.normalize_observations)


def build_actor_critic_learner(config):
    """An ActorCriticLearner (A2C, A3C): one gradient step per rollout, n-step returns or GAE."""
    loss = config.actor_critic
    settings = actor_critic.LossSettings(
        gamma=config.gamma, entropy_coef=loss.entropy_coef,
        value_loss_coef=loss.value_loss_coef, clip_norm=loss.clip_norm,
        gae_lambda=loss.gae_lambda)
    return actor_critic.ActorCriticLearner(
        _model(config), make_optimizer(config), settings,
        actor_critic.observation_spec(config.env_config), seed=config.seed, horizon=config.horizon,
        jit_compile=config.jit_compile, acting_model=_acting_model(config),
        reuse_activations=config.reuse_activations)


def build_ppo_learner(config):
    """A PPOLearner (PPO, APPO): epochs x minibatches clipped-objective steps per batch."""
    loss, ppo_config = config.actor_critic, config.ppo
    settings = ppo.PPOSettings(
        gamma=config.gamma, gae_lambda=loss.gae_lambda, ratio_clip=ppo_config.ratio_clip,
        entropy_coef=loss.entropy_coef, value_loss_coef=loss.value_loss_coef,
        epochs=ppo_config.epochs, minibatches=ppo_config.minibatches, clip_norm=loss.clip_norm,
        normalize_advantages=ppo_config.normalize_advantages,
        anneal_steps=config.total_steps if ppo_config.anneal_ratio_clip else None,
        kl_target=ppo_config.kl_target, normalize_values=ppo_config.normalize_values)
    return ppo.PPOLearner(_model(config), make_optimizer(config), settings,
                          actor_critic.observation_spec(config.env_config), config.horizon,
                          seed=config.seed, jit_compile=config.jit_compile,
                          acting_model=_acting_model(config))


def build_q_learner(config):
    """The Q-value family's QLearner (AccelConfig with q_values): network, variants,
    optimizer; kinds.build_learner puts it under a strategy's scope (every minibatch then split
    over its replicas)."""
    q_values = config.q_values
    env_config = config.env_config
    num_actions = env_config.num_actions()

    def make_network():
        return networks.make_q_network(
            num_actions, env_config.observation_shape, env_config.observation_dtype,
            network=config.network, dueling=q_values.dueling, torso_kwargs=config.torso_kwargs,
            initializer=config.initializer, seed=config.seed, support=q_values.support,
            compute_dtype=config.compute_dtype)

    settings = q_learner.QSettings(
        gamma=config.gamma, double_dqn=q_values.double_dqn, huber_delta=q_values.huber_delta,
        n_step=q_values.n_step, importance_weighted=q_values.prioritized,
        categorical=q_values.num_atoms > 1, clip_norm=q_values.clip_norm,
        categorical_priority=q_values.categorical_priority)
    optimizer = make_optimizer(config)
    spec = tf.TensorSpec((None,) + tuple(env_config.observation_shape),
                         tf.as_dtype(env_config.observation_dtype))
    return q_learner.QLearner(make_network, num_actions, optimizer, settings, spec,
                              name='accel_q_learner', jit_compile=config.jit_compile)
