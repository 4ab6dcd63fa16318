"""Trains A2C, PPO, A3C, APPO or the Q-value family on the accelerated-methods samplers:
`python -m accel_tf.main --gin_file=gin/accel/ppo_pong.gin [--gin_bindings=...]`; on several
machines, the same command on each with `--cluster=host1:port,host2:port --task_index=i` and
DistributeConfig.strategy = 'multi_worker'."""
import dataclasses

from absl import flags

from accel_tf import async_units
from accel_tf import config as config_lib
from accel_tf import learners
from accel_tf import q_family
from common import app
from common import cluster as cluster_lib
from common import config as common_config
from common import distribute
from common import evaluate
from common import multi_worker
from common import on_policy

FLAGS = flags.FLAGS
PAPER = 'accel'
RENAMED = common_config.renamed_bindings('AccelConfig')


def configure(gin_files, gin_bindings):
    """Parses and validates the config; raises ConfigError before anything starts."""
    app.parse_gin(gin_files, gin_bindings, renamed=RENAMED)
    config = config_lib.AccelConfig()
    return common_config.validate_sampled_run(config, pin_cpus=config.pin_cpus)


def train(config, run_dir, make_pool=learners.open_pool, on_first_pool=None):
    """Runs config's algorithm until config.total_steps, resuming from run_dir's checkpoint."""
    if config.algorithm in config_lib.ASYNC_ALGORITHMS:
        if on_first_pool is not None:
            on_first_pool()
        return async_units.train(config, run_dir)
    strategy = distribute.strategy_of(config.distribute)
    # A multi-worker run's worker samples its share of the simulators.
    workers = multi_worker.WorkerShare.of(strategy).num_workers
    config_share = dataclasses.replace(config, num_workers=config.num_workers // workers)

    def pool_for(seed):
        pool = make_pool(config_share, seed)
        if on_first_pool is not None:
            on_first_pool()
        return pool

    if config.algorithm in config_lib.Q_ALGORITHMS:
        return q_family.train(config, run_dir, q_family.build_q_learner(config, strategy),
                              pool_for, strategy)
    learner = learners.build_learner(config, strategy)
    return on_policy.train(config, run_dir, learner, pool_for, config.sampler, config.horizon,
                           config.num_envs, strategy)


def main():
    config = configure(FLAGS.gin_file, FLAGS.gin_bindings)
    found = cluster_lib.configure(config, FLAGS.cluster, FLAGS.task_index)
    with multi_worker.run_dir_of(found, lambda: app.start_run_dir(
            PAPER, config.env_config, algorithm=config.algorithm,
            network=config.network)) as (run_dir, is_chief):
        train(config, run_dir, on_first_pool=(lambda: app.write_operative_config(run_dir))
              if is_chief else None)


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
