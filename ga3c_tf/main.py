"""Trains GA3C: `python -m ga3c_tf.main --gin_file=gin/ga3c/pong.gin [--gin_bindings=...]`.

GA3CConfig.algorithm = 'a3c_cpu' runs the paper's CPU A3C baseline on the same config instead.
Play a trained run: `python -m common.evaluate --run_dir=runs/ga3c-pong-...`.
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
from common.launch import app
from common.launch import entry
from common.launch import memory_check as mem
from common.system import devices

# Bindings whose names changed, read as their names today (GA3C's TIME_MAX is the horizon, the
# word every paper's config uses); common.tools.reproduce reads published runs through it.
MOVED = {'GA3CConfig.t_max': 'GA3CConfig.horizon'}
# Options added after runs were published, with the value the code ran as before them
# (common.tools.reproduce): d754472 (2026-11-29) added the original code's 'every_knob' walk;
# the named evaluation protocol changes no training, only what common.evaluate plays ('ga3c':
# 30 games from reset, argmax pi; before it, 30 sampled from up to 30 no-ops, 18,000 steps).
ADDED = {'GA3CConfig.dynamic_walk': "'one_knob'", 'GA3CConfig.eval_protocol': "'ga3c'"}


def configure(gin_files, gin_bindings):
    """Parses, resolves and validates the config; raises ConfigError before anything starts."""
    from common.launch import config as config_lib  # pylint: disable=import-outside-toplevel
    from ga3c_tf import config as ga3c_config  # pylint: disable=import-outside-toplevel
    app.parse_gin(gin_files, gin_bindings, renamed=config_lib.renamed_bindings('GA3CConfig'),
                  moved=MOVED)
    return config_lib.resolve(ga3c_config.GA3CConfig())


def train(config, run_dir):
    if config.algorithm == 'a3c_cpu':
        from ga3c_tf import a3c_cpu  # pylint: disable=import-outside-toplevel
        return a3c_cpu.train(config, run_dir)
    from ga3c_tf import loop  # pylint: disable=import-outside-toplevel
    return loop.train(config, run_dir)


def load_policy(run_dir, greedy=False, choice=None):
    """The trained policy of a run, for common.evaluate: (env_config, policy_fn, env_steps)."""
    from common.launch import config as config_lib  # pylint: disable=import-outside-toplevel
    from common import evaluate  # pylint: disable=import-outside-toplevel
    from ga3c_tf import config as ga3c_config  # pylint: disable=import-outside-toplevel
    from ga3c_tf import learner as learner_lib  # pylint: disable=import-outside-toplevel
    return evaluate.actor_critic_policy(
        run_dir, ga3c_config.GA3CConfig, learner_lib.build_learner, greedy,
        obsolete=config_lib.renamed_bindings('GA3CConfig'), moved=MOVED, choice=choice)


def memory(config):
    """What a GA3C run holds (common/launch/memory_check.py): its TensorFlow process (predictors and
    trainers are threads of it), the agent processes (as many as the dynamic adjustment may
    reach; each with TensorFlow in the A3C-CPU baseline) with their emulators, and the
    training queue's batches."""
    agents = max(config.num_agents, config.max_agents if config.dynamic_settings else 0)
    frame = mem.observation_bytes(config.env_config)
    process = mem.TF_PROCESS_BYTES if config.algorithm == 'a3c_cpu' else \
        mem.WORKER_PROCESS_BYTES
    knob = 'GA3CConfig.max_agents' if config.dynamic_settings else 'GA3CConfig.num_agents'
    return [mem.Need('the TensorFlow process', mem.TF_PROCESS_BYTES),
            mem.Need(f'{agents} agent processes',
                     agents * (process + mem.EMULATOR_BYTES + (config.horizon + 1) * frame), knob),
            mem.Need('the training queue', config.training_queue_size * config.horizon * frame,
                     'GA3CConfig.training_queue_size')]


PAPER = entry.Paper(
    'ga3c', configure, train, memory=memory,
    model_identity=lambda config: {'algorithm': config.algorithm, 'network': config.network,
                                   'torso_kwargs': config.model_kwargs()['torso_kwargs']},
    # The A3C-CPU baseline computes on CPUs only (section 3.2), its agents and main process.
    compute=lambda config: devices.Placement(cpu_only=config.algorithm == 'a3c_cpu'))

if __name__ == '__main__':
    entry.main(PAPER)  # a dead agent: one line and a checkpoint (errors.RunError)
