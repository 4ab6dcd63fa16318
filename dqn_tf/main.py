"""Trains fast DQN: `python -m dqn_tf.main --gin_file=gin/dqn/pong.gin [--gin_bindings=...]`."""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
from common import evaluate
from common.launch import app
from common.launch import config as common_config
from common.launch import entry
from common.launch import memory_check as mem
from common.system import devices
from dqn_tf import config as config_lib
from dqn_tf import dqn

MOVED = config_lib.MOVED  # common.tools.reproduce reads old runs' names through it
# Options added after runs were published, with the value the code ran as before them
# (common.tools.reproduce): 82ac82d (2026-11-28) added actors stepping in processes; the named
# evaluation protocol replaced eval_episodes, eval_epsilon and paper.gin's evaluation_env_config
# bindings, whose values 'fast_dqn' holds (30 episodes, epsilon 0.05, 30 no-ops, 27,000 steps).
ADDED = {'DQNConfig.actor_envs': "'thread'", 'DQNConfig.eval_protocol': "'fast_dqn'"}


def configure(gin_files, gin_bindings):
    """Parses, resolves and validates the config; raises ConfigError before anything starts."""
    app.parse_gin(gin_files, gin_bindings, renamed=config_lib.RENAMED, moved=config_lib.MOVED)
    return common_config.resolve(config_lib.DQNConfig())


def load_policy(run_dir, greedy=False, choice=None):
    """The trained policy of a run, for common.evaluate: (env_config, policy_fn, env_steps);
    epsilon-greedy at its protocol's epsilon (evaluate.run_protocol), 0 if greedy."""
    from common.run import checkpoint as checkpoint_lib
    app.parse_recorded_config(run_dir, config_lib.RENAMED, moved=config_lib.MOVED)
    config = common_config.with_machine_dtype(config_lib.DQNConfig())
    protocol = evaluate.run_protocol(config, 'q_values', greedy, choice)
    learner = dqn.build_learner(config)
    env_steps = checkpoint_lib.restore_latest(run_dir, online=learner.online)
    policy = evaluate.q_value_policy(learner, protocol, seed=config.seed + env_steps)
    return config.env_config, policy, env_steps


def memory(config):
    """What a fast DQN run holds (common/launch/memory_check.py): its TensorFlow process (the W
    actors are threads of it) with W emulators, the replay memory (each frame once) and the
    staging buffer of a target period's steps."""
    env = config.env_config
    return [mem.Need('the TensorFlow process', mem.TF_PROCESS_BYTES),
            mem.Need(f'{config.num_actors} emulators', config.num_actors * (
                mem.EMULATOR_BYTES + 2 * mem.observation_bytes(env)), 'DQNConfig.num_actors'),
            mem.replay_need('DQNConfig.replay_capacity', config.replay_capacity, env),
            mem.Need('the staging buffer', config.target_period * (
                mem.frame_bytes(env) + mem.ITEM_BYTES), 'DQNConfig.target_period')]


PAPER = entry.Paper(
    'dqn', configure, dqn.train, memory=memory,
    model_identity=lambda config: {'network': config.network, 'dueling': config.dueling,
                                   'torso_kwargs': config.torso_kwargs},
    prepare=lambda config: devices.set_intra_op_threads(config.intra_op_threads()))

if __name__ == '__main__':
    entry.main(PAPER)
