"""The learner of each algorithm, built from an AccelConfig (the network, the optimizer with the
(scaled, optionally annealed) learning rate, and A2C's or PPO's update), and the environment pool
its sampler steps."""
from accel_tf import ppo
from common import actor_critic
from common import config as config_lib
from common import networks
from common import optim
from common.envs import pools


def open_pool(config, seed):
    """The worker processes of config's sampler (two groups for the alternating one), for each
    replica of a one-machine mirrored run."""
    return pools.make_pool(config.env_config, config.num_envs, seed=seed,
                           num_workers=config.num_workers,
                           num_groups=config_lib.sampler_groups(config.sampler, config.distribute),
                           pin_cpus=config.pin_cpus)


def make_optimizer(config, total_updates):
    """RMSProp (config's RMSPropConfig fields) or Adam, at config.scaled_learning_rate,
    annealed linearly to 0 over total_updates gradient steps if config.anneal_learning_rate."""
    rate = config.scaled_learning_rate
    if config.anneal_learning_rate:
        rate = optim.LinearSchedule(rate, 0.0, max(1, total_updates))
    if config.optimizer == 'adam':
        return optim.Adam(rate, beta1=config.adam_beta1, beta2=config.adam_beta2,
                          epsilon=config.adam_epsilon)
    return config.make_rmsprop(rate)


def gradient_steps_per_update(config):
    """Gradient steps in one optimization phase: 1 for A2C, epochs x minibatches for PPO."""
    return config.epochs * config.minibatches if config.algorithm in ('ppo', 'appo') else 1


def build_learner(config, strategy=None):
    """An ActorCriticLearner (A2C, A3C) or a PPOLearner (PPO, APPO) with config's network and
    optimizer, under strategy's scope if given (its updates then run on every replica)."""
    if strategy is not None:
        with strategy.scope():
            return build_learner(config)
    model = networks.actor_critic_for(config.env_config, config.network, config.initializer,
                                      config.seed, torso_kwargs=config.torso_kwargs)
    total_updates = (config.total_steps // config.steps_per_update
                     * gradient_steps_per_update(config))
    optimizer = make_optimizer(config, total_updates)
    spec = actor_critic.observation_spec(config.env_config)
    if config.algorithm in ('ppo', 'appo'):
        settings = ppo.PPOSettings(
            gamma=config.gamma, gae_lambda=config.gae_lambda, ratio_clip=config.ratio_clip,
            entropy_coef=config.entropy_coef, value_loss_coef=config.value_loss_coef,
            epochs=config.epochs, minibatches=config.minibatches, clip_norm=config.clip_norm,
            normalize_advantages=config.normalize_advantages,
            anneal_updates=max(1, total_updates) if config.anneal_ratio_clip else None)
        return ppo.PPOLearner(model, optimizer, settings, spec, config.horizon, seed=config.seed)
    settings = actor_critic.LossSettings(
        gamma=config.gamma, entropy_coef=config.entropy_coef,
        value_loss_coef=config.value_loss_coef, clip_norm=config.clip_norm,
        gae_lambda=config.gae_lambda)
    return actor_critic.ActorCriticLearner(model, optimizer, settings, spec, seed=config.seed,
                                           t_max=config.horizon)
