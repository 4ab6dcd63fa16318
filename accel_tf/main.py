"""Trains an algorithm of accel_tf/algorithms.py (A2C, PPO, A3C, APPO, DQN, categorical DQN,
eps-Rainbow) on the accelerated-methods samplers:
`python -m accel_tf.main --gin_file=gin/accel/ppo_pong.gin [--gin_bindings=...]`; on several
machines, the same command on each with `--cluster=host1:port,host2:port --task_index=i` and
DistributeConfig.strategy = 'multi_worker'."""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
from accel_tf import config as config_lib
from accel_tf import kinds
from accel_tf import q_config
from common.launch import app
from common.launch import config as common_config
from common.launch import entry
from common.launch import memory_check as mem

RENAMED = {**common_config.renamed_bindings('AccelConfig'), **config_lib.RENAMED,
           **q_config.RENAMED}
# common.tools.reproduce reads published runs' old names through it.
MOVED = {**config_lib.MOVED, **config_lib.READ_AS}
# Options added after runs were published, with the value the code ran as before them
# (common.tools.reproduce): rl_games' options of 9e1c318, 014e0fb and 8592995, off then; the
# named evaluation protocols: 'stooke' holds the Q-value family's eval_max_steps, eval_envs,
# eval_max_path_steps and eval_epsilon it replaced (125,000, 4, 27,000, 0.001); 'stooke_pg' only
# changes what common.evaluate plays (30 episodes sampled, 18,000 steps, before it).
ADDED = {'PPOConfig.kl_target': '0.0', 'PPOConfig.normalize_observations': 'False',
         'PPOConfig.normalize_values': 'False', 'QValueConfig.eval_protocol': "'stooke'",
         'ActorCriticConfig.eval_protocol': "'stooke_pg'"}


def configure(gin_files, gin_bindings):
    """Parses, resolves and validates the config; raises ConfigError before anything starts."""
    app.parse_gin(gin_files, gin_bindings, renamed=RENAMED, moved=config_lib.READ_AS)
    config = config_lib.from_gin()
    return common_config.resolve_sampled_run(config, pin_cpus=config.pin_cpus)


def model_identity(config):
    """What the run's checkpoints depend on besides the environment (run.json): the algorithm
    and the model's shape (network, torso, and for the Q-value family dueling streams and
    atoms)."""
    model = {'algorithm': config.algorithm, 'network': config.network,
             'torso_kwargs': config.torso_kwargs}
    if config.q_values is not None:
        model.update(dueling=config.q_values.dueling, num_atoms=config.q_values.num_atoms)
    return model


def load_policy(run_dir, greedy=False, choice=None):
    """The trained policy of a run, for common.evaluate: (env_config, policy_fn, env_steps);
    its row's update kind says how it is read back (kinds.UPDATES), acting by the run's
    evaluation protocol or choice's over it (evaluate.run_protocol)."""
    return kinds.load_policy(run_dir, greedy, RENAMED, choice)


def memory(config):
    """What a run of the accelerated methods holds (common/launch/memory_check.py), per learner
    (A3C and APPO run num_actor_learners, each a TensorFlow process with its own samplers): worker
    processes, simulators with their observations, the rollout, and the Q-value family's
    replay."""
    learners = config.num_actor_learners
    env = config.env_config
    frame = mem.observation_bytes(env)
    processes = learners + (learners > 1)  # the learners, and the main process beside them
    needs = [mem.Need(f'TensorFlow processes: {processes}', processes * mem.TF_PROCESS_BYTES,
                      'AccelConfig.num_actor_learners'),
             mem.Need(f'{learners * config.num_workers} worker processes',
                      learners * config.num_workers * mem.WORKER_PROCESS_BYTES,
                      'AccelConfig.num_workers'),
             mem.Need(f'{learners * config.num_envs:,} simulators',
                      learners * config.num_envs * (mem.EMULATOR_BYTES + 2 * frame),
                      'AccelConfig.envs_per_worker'),
             mem.Need('the rollouts', learners * (config.horizon + 1) * config.num_envs * frame,
                      'AccelConfig.horizon')]
    if config.q_values is not None:
        needs.append(mem.replay_need('QValueConfig.replay_capacity',
                                     config.q_values.replay_capacity, env))
    return needs


PAPER = entry.Paper('accel', configure, kinds.train, model_identity, cluster=True,
                    compute=kinds.compute, memory=memory)

if __name__ == '__main__':
    entry.main(PAPER)
