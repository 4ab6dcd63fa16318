"""Trains PAAC: `python -m paac_tf.main --gin_file=gin/paac/pong.gin [--gin_bindings=...]`."""
from absl import flags

from common import app
from common.envs import pools
from paac_tf import paac

FLAGS = flags.FLAGS
PAPER = 'paac'


def env_name(env_config):
    return getattr(env_config, 'game', None) or getattr(env_config, 'env_id', 'env')


def configure(gin_files, gin_bindings):
    """Parses and validates the config; raises ConfigError before anything starts."""
    app.parse_gin(gin_files, gin_bindings)
    config = paac.PAACConfig()
    config.validate()
    try:
        pools.validate_pool_config(config.env_config, config.num_envs, config.num_workers,
                                   num_groups=2 if config.alternating_halves else 1)
    except ValueError as error:
        raise app.ConfigError(f'make_pool: {error}')
    return config


def make_pool(env_config, num_envs, seed, num_workers, num_groups=1):
    return pools.make_pool(env_config, num_envs, seed=seed, num_workers=num_workers,
                           num_groups=num_groups)


def main():
    config = configure(FLAGS.gin_file, FLAGS.gin_bindings)
    invocation = {'paper': PAPER, 'gin_files': FLAGS.gin_file, 'gin_bindings': FLAGS.gin_bindings}
    run_dir = app.resolve_run_dir(PAPER, env_name(config.env_config), FLAGS.run_dir, invocation)
    app.prepare_run_dir(run_dir, invocation)
    print(f'run directory: {run_dir}')
    learner_config_written = False

    def make_pool_and_record_config(*args, **kwargs):
        nonlocal learner_config_written
        pool = make_pool(*args, **kwargs)
        if not learner_config_written:
            app.write_operative_config(run_dir)
            learner_config_written = True
        return pool

    paac.train(config, run_dir, make_pool_and_record_config)


def load_policy(run_dir, greedy=False):
    """The trained policy of a run, for common.evaluate: (env_config, policy_fn, env_steps)."""
    from common import checkpoint as checkpoint_lib
    import tensorflow as tf
    app.parse_gin([f'{run_dir}/{app.OPERATIVE_CONFIG_FILE}'], [])
    config = paac.PAACConfig()
    learner = paac.build_learner(config)
    counters = checkpoint_lib.Counters()
    checkpoint = tf.train.Checkpoint(model=learner.model, counters=counters)
    latest = tf.train.latest_checkpoint(f'{run_dir}/checkpoints')
    if latest is None:
        raise app.ConfigError(f'no checkpoint in {run_dir}/checkpoints')
    checkpoint.restore(latest).expect_partial()
    policy = learner.greedy_act if greedy else learner.act
    return config.env_config, lambda observations: policy(observations).numpy(), int(
        counters.env_steps.numpy())


if __name__ == '__main__':
    app.run(main)
