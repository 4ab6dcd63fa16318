"""Trains PAAC: `python -m paac_tf.main --gin_file=gin/paac/pong.gin [--gin_bindings=...]`."""
from absl import flags

from common import app
from common import cluster
from common import config as config_lib
from common import evaluate
from common import multi_worker
from common.envs import pools
from paac_tf import paac

FLAGS = flags.FLAGS
PAPER = 'paac'
RENAMED = {**config_lib.renamed_bindings('PAACConfig'),
           'PAACConfig.alternating_halves': "bind PAACConfig.sampler = 'alternating' instead"}


def configure(gin_files, gin_bindings):
    """Parses and validates the config; raises ConfigError before anything starts."""
    app.parse_gin(gin_files, gin_bindings, renamed=RENAMED)
    return config_lib.validate_sampled_run(paac.PAACConfig())


def make_pool(env_config, num_envs, seed, num_workers, num_groups=1):
    return pools.make_pool(env_config, num_envs, seed=seed, num_workers=num_workers,
                           num_groups=num_groups)


def main():
    config = configure(FLAGS.gin_file, FLAGS.gin_bindings)
    found = cluster.configure(config, FLAGS.cluster, FLAGS.task_index)
    with multi_worker.run_dir_of(found, lambda: app.start_run_dir(
            PAPER, config.env_config, network=config.network)) as (run_dir, is_chief):
        config_written = not is_chief  # only the chief writes the run directory

        def make_pool_and_record_config(*args, **kwargs):
            nonlocal config_written
            pool = make_pool(*args, **kwargs)
            if not config_written:
                app.write_operative_config(run_dir)
                config_written = True
            return pool

        paac.train(config, run_dir, make_pool_and_record_config)


def load_policy(run_dir, greedy=False):
    """The trained policy of a run, for common.evaluate: (env_config, policy_fn, env_steps)."""
    return evaluate.actor_critic_policy(run_dir, paac.PAACConfig, paac.build_learner, greedy,
                                        obsolete=RENAMED)


if __name__ == '__main__':
    app.run(main)
