"""Trains PAAC: `python -m paac_tf.main --gin_file=gin/paac/pong.gin [--gin_bindings=...]`."""
from common.run import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
from common import evaluate
from common.envs import pools
from common.run import app
from common.run import config as config_lib
from common.run import entry
from paac_tf import paac

RENAMED = {**config_lib.renamed_bindings('PAACConfig'),
           'PAACConfig.alternating_halves': "bind PAACConfig.sampler = 'alternating' instead"}


def configure(gin_files, gin_bindings):
    """Parses and validates the config; raises ConfigError before anything starts."""
    app.parse_gin(gin_files, gin_bindings, renamed=RENAMED)
    return config_lib.validate_sampled_run(paac.PAACConfig())


def make_pool(env_config, num_envs, seed, num_workers, num_groups=1):
    return pools.make_pool(env_config, num_envs, seed=seed, num_workers=num_workers,
                           num_groups=num_groups)


def load_policy(run_dir, greedy=False):
    """The trained policy of a run, for common.evaluate: (env_config, policy_fn, env_steps)."""
    return evaluate.actor_critic_policy(run_dir, paac.PAACConfig, paac.build_learner, greedy,
                                        obsolete=RENAMED)


def train(config, run_dir):
    """PAAC on its process pool (tests give paac.train a pool of their own)."""
    return paac.train(config, run_dir, make_pool)


PAPER = entry.Paper('paac', configure, train,
                    model_identity=lambda config: {'network': config.network}, cluster=True)

if __name__ == '__main__':
    entry.main(PAPER)
