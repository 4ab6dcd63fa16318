"""The learner of each update kind (accel_tf/algorithms.py UPDATES), built from an AccelConfig
(the network, the optimizer with the (scaled, optionally annealed) learning rate, and the
update), and the environment pool its sampler steps."""
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


def _model(config):
    return networks.actor_critic_for(config.env_config, config.network, config.initializer,
                                     config.seed, torso_kwargs=config.torso_kwargs)


def build_actor_critic_learner(config):
    """An ActorCriticLearner (A2C, A3C): one gradient step per rollout, n-step returns or GAE."""
    total_updates = config.total_steps // config.steps_per_update
    loss = config.actor_critic
    settings = actor_critic.LossSettings(
        gamma=config.gamma, entropy_coef=loss.entropy_coef,
        value_loss_coef=loss.value_loss_coef, clip_norm=loss.clip_norm,
        gae_lambda=loss.gae_lambda)
    return actor_critic.ActorCriticLearner(
        _model(config), make_optimizer(config, total_updates), settings,
        actor_critic.observation_spec(config.env_config), seed=config.seed, t_max=config.horizon)


def build_ppo_learner(config):
    """A PPOLearner (PPO, APPO): epochs x minibatches clipped-objective steps per batch."""
    loss, phase = config.actor_critic, config.ppo
    total_updates = config.total_steps // config.steps_per_update * phase.gradient_steps
    settings = ppo.PPOSettings(
        gamma=config.gamma, gae_lambda=loss.gae_lambda, ratio_clip=phase.ratio_clip,
        entropy_coef=loss.entropy_coef, value_loss_coef=loss.value_loss_coef,
        epochs=phase.epochs, minibatches=phase.minibatches, clip_norm=loss.clip_norm,
        normalize_advantages=phase.normalize_advantages,
        anneal_updates=max(1, total_updates) if phase.anneal_ratio_clip else None)
    return ppo.PPOLearner(_model(config), make_optimizer(config, total_updates), settings,
                          actor_critic.observation_spec(config.env_config), config.horizon,
                          seed=config.seed)


def build_q_learner(config):
    """The Q-value family's QLearner (accel_tf/q_family.py, which imports this module for
    make_optimizer: imported here when called)."""
    from accel_tf import q_family  # pylint: disable=import-outside-toplevel
    return q_family.build_q_learner(config)


# Update kind of accel_tf/algorithms.py -> the builder of its learner.
BUILDERS = {'actor_critic': build_actor_critic_learner, 'ppo': build_ppo_learner,
            'q_learning': build_q_learner}


def build_learner(config, strategy=None):
    """The learner of config's algorithm (its row's update kind), with config's network and
    optimizer, under strategy's scope if given (its updates then run on every replica)."""
    if strategy is not None:
        with strategy.scope():
            return build_learner(config)
    return BUILDERS[config.row.update](config)
