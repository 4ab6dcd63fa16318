"""Trains PAAC: `python -m paac_tf.main --gin_file=gin/paac/pong.gin [--gin_bindings=...]`."""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
from common import evaluate
from common.envs import pools
from common.launch import app
from common.launch import config as config_lib
from common.launch import entry
from common.launch import memory_check as mem
from paac_tf import paac

# Bindings whose names changed, read as their names today (the paper's tmax is the horizon, the
# word every paper's config uses); common.tools.reproduce reads published runs through it.
MOVED = {'PAACConfig.t_max': 'PAACConfig.horizon'}
# Options added after runs were published, with the value the code ran as before them
# (common.tools.reproduce): 65a99cd (2026-11-28) added the per-environment learning rate; the
# named evaluation protocol changes no training, only what common.evaluate plays ('paac': 30
# games of up to 108,000 frames; before it, 30 of up to 18,000 steps = 72,000 frames).
ADDED = {'PAACConfig.learning_rate_per_env': 'None', 'PAACConfig.eval_protocol': "'paac'"}
RENAMED = {**config_lib.renamed_bindings('PAACConfig'),
           'PAACConfig.alternating_halves': "bind PAACConfig.sampler = 'alternating' instead"}


def configure(gin_files, gin_bindings):
    """Parses, resolves and validates the config; raises ConfigError before anything starts."""
    app.parse_gin(gin_files, gin_bindings, renamed=RENAMED, moved=MOVED)
    return config_lib.resolve_sampled_run(paac.PAACConfig())


def make_pool(env_config, num_envs, seed, num_workers, num_groups=1):
    return pools.make_pool(env_config, num_envs, seed=seed, num_workers=num_workers,
                           num_groups=num_groups)


def load_policy(run_dir, greedy=False, choice=None):
    """The trained policy of a run, for common.evaluate: (env_config, policy_fn, env_steps)."""
    return evaluate.actor_critic_policy(run_dir, paac.PAACConfig, paac.build_learner, greedy,
                                        obsolete=RENAMED, moved=MOVED, choice=choice)


def train(config, run_dir):
    """PAAC on its process pool (tests give paac.train a pool of their own)."""
    return paac.train(config, run_dir, make_pool)


def memory(config):
    """What a PAAC run holds (common/launch/memory_check.py): the learner's process, nw workers, ne
    emulators with their observations, and the (horizon + 1) x ne rollout."""
    frame = mem.observation_bytes(config.env_config)
    return [mem.Need('the TensorFlow process', mem.TF_PROCESS_BYTES),
            mem.Need(f'{config.num_workers} worker processes',
                     config.num_workers * mem.WORKER_PROCESS_BYTES, 'PAACConfig.num_workers'),
            mem.Need(f'{config.num_envs:,} emulators',
                     config.num_envs * (mem.EMULATOR_BYTES + 2 * frame), 'PAACConfig.num_envs'),
            mem.Need('the rollout', (config.horizon + 1) * config.num_envs * frame,
                     'PAACConfig.num_envs')]


PAPER = entry.Paper('paac', configure, train,
                    model_identity=lambda config: {'network': config.network}, cluster=True,
                    memory=memory)

if __name__ == '__main__':
    entry.main(PAPER)
