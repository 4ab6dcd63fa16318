"""Trains A2C, PPO, A3C or APPO on the accelerated-methods samplers:
`python -m accel_tf.main --gin_file=gin/accel/ppo_pong.gin [--gin_bindings=...]`."""
from absl import flags

from accel_tf import async_units
from accel_tf import config as config_lib
from accel_tf import learners
from accel_tf import q_family
from common import app
from common import config as common_config
from common import evaluate
from common import on_policy
from common import samplers
from common.envs import pools

FLAGS = flags.FLAGS
PAPER = 'accel'
RENAMED = common_config.renamed_bindings('AccelConfig')


def configure(gin_files, gin_bindings):
    """Parses and validates the config; raises ConfigError before anything starts."""
    app.parse_gin(gin_files, gin_bindings, renamed=RENAMED)
    config = config_lib.AccelConfig()
    if config.distribute is None:
        config.distribute = common_config.DistributeConfig()
    config.validate()
    try:
        pools.validate_pool_config(config.env_config, config.num_envs, config.num_workers,
                                   num_groups=samplers.num_groups(config.sampler),
                                   pin_cpus=config.pin_cpus)
    except ValueError as error:
        raise app.ConfigError(f'make_pool: {error}')
    return config


def train(config, run_dir, make_pool=learners.open_pool, on_first_pool=None):
    """Runs config's algorithm until config.total_steps, resuming from run_dir's checkpoint."""
    if config.algorithm in config_lib.ASYNC_ALGORITHMS:
        if on_first_pool is not None:
            on_first_pool()
        return async_units.train(config, run_dir)
    def pool_for(seed):
        pool = make_pool(config, seed)
        if on_first_pool is not None:
            on_first_pool()
        return pool

    if config.algorithm in config_lib.Q_ALGORITHMS:
        return q_family.train(config, run_dir, q_family.build_q_learner(config), pool_for)
    learner = learners.build_learner(config, learners.make_strategy(config))
    return on_policy.train(config, run_dir, learner, pool_for, config.sampler, config.horizon,
                           config.num_envs)


def main():
    config = configure(FLAGS.gin_file, FLAGS.gin_bindings)
    run_dir = app.start_run_dir(PAPER, config.env_config, algorithm=config.algorithm,
                                network=config.network)
    train(config, run_dir, on_first_pool=lambda: app.write_operative_config(run_dir))


def load_policy(run_dir, greedy=False):
    """The trained policy of a run, for common.evaluate: (env_config, policy_fn, env_steps);
    for the Q-value family, greedy or epsilon-greedy at the run's final epsilon."""
    app.parse_recorded_config(run_dir, RENAMED)
    config = config_lib.AccelConfig()
    if config.algorithm not in config_lib.Q_ALGORITHMS:
        return evaluate.actor_critic_policy(run_dir, config_lib.AccelConfig,
                                            learners.build_learner, greedy, obsolete=RENAMED)
    from common import checkpoint as checkpoint_lib  # pylint: disable=import-outside-toplevel
    learner = q_family.build_q_learner(config)
    env_steps = checkpoint_lib.restore_latest(run_dir, online=learner.online)
    epsilon = 0.0 if greedy else config.q_values.final_epsilon
    return (config.env_config, evaluate.epsilon_greedy_policy(learner, epsilon,
                                                             config.seed + env_steps), env_steps)


if __name__ == '__main__':
    app.run(main)
