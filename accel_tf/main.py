"""Trains an algorithm of accel_tf/algorithms.py (A2C, PPO, A3C, APPO, DQN, categorical DQN,
eps-Rainbow) on the accelerated-methods samplers:
`python -m accel_tf.main --gin_file=gin/accel/ppo_pong.gin [--gin_bindings=...]`; on several
machines, the same command on each with `--cluster=host1:port,host2:port --task_index=i` and
DistributeConfig.strategy = 'multi_worker'."""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import dataclasses

from accel_tf import async_units
from accel_tf import config as config_lib
from accel_tf import learners
from accel_tf import q_family
from common import evaluate
from common.launch import app
from common.launch import config as common_config
from common.launch import entry
from common.launch import memory_check as mem
from common.run import devices
from common.scale import distribute
from common.scale import multi_worker
from common.units import on_policy

RENAMED = {**common_config.renamed_bindings('AccelConfig'), **config_lib.RENAMED}
MOVED = config_lib.MOVED  # common.tools.reproduce reads published runs' old names through it


def configure(gin_files, gin_bindings):
    """Parses, resolves and validates the config; raises ConfigError before anything starts."""
    app.parse_gin(gin_files, gin_bindings, renamed=RENAMED)
    config = config_lib.from_gin()
    return common_config.resolve_sampled_run(config, pin_cpus=config.pin_cpus)


def _sampling(config, make_pool):
    """(strategy, pool_for(seed)) of a synchronous run: each machine of a multi-worker run
    samples its share of the simulators."""
    strategy = distribute.strategy_of(config.distribute)
    machines = multi_worker.MachineShare.of(strategy).num_machines
    config_share = dataclasses.replace(config, num_workers=config.num_workers // machines)

    def pool_for(seed):
        return make_pool(config_share, seed)

    return strategy, pool_for


def _train_on_policy(config, run_dir, make_pool):
    strategy, pool_for = _sampling(config, make_pool)
    learner = learners.build_learner(config, strategy)
    return on_policy.train(config, run_dir, learner, pool_for, config.sampler, config.horizon,
                           config.num_envs, strategy)


def _train_q_values(config, run_dir, make_pool):
    strategy, pool_for = _sampling(config, make_pool)
    return q_family.train(config, run_dir, learners.build_learner(config, strategy), pool_for,
                          strategy)


def _train_asynchronous(config, run_dir, make_pool):
    del make_pool  # each learner process opens its unit's pool (async_units.open_unit)
    return async_units.train(config, run_dir)


# Loop kind of accel_tf/algorithms.py -> its trainer: (config, run_dir, make_pool(config, seed))
# -> the environment steps reached.
TRAINERS = {'on_policy': _train_on_policy, 'q_values': _train_q_values,
            'asynchronous': _train_asynchronous}


def train(config, run_dir, make_pool=learners.open_pool):
    """Runs config's algorithm until config.total_steps, resuming from run_dir's checkpoint."""
    return TRAINERS[config.row.loop](config, run_dir, make_pool)


def model_identity(config):
    """What the run's checkpoints depend on besides the environment (run.json): the algorithm
    and the model's shape (network, torso, and for the Q-value family dueling streams and
    atoms)."""
    model = {'algorithm': config.algorithm, 'network': config.network,
             'torso_kwargs': config.torso_kwargs}
    if config.q_values is not None:
        model.update(dueling=config.q_values.dueling, num_atoms=config.q_values.num_atoms)
    return model


def _actor_critic_policy(run_dir, greedy):
    return evaluate.actor_critic_policy(run_dir, lambda: config_lib.from_gin(refuse_unread=False),
                                        learners.build_learner, greedy, obsolete=RENAMED)


def _q_policy(run_dir, greedy):
    from common.run import checkpoint as checkpoint_lib  # pylint: disable=import-outside-toplevel
    app.parse_recorded_config(run_dir, RENAMED)
    config = config_lib.from_gin(refuse_unread=False)
    learner = learners.build_q_learner(config)
    env_steps = checkpoint_lib.restore_latest(run_dir, online=learner.online)
    epsilon = 0.0 if greedy else config.q_values.final_epsilon
    return (config.env_config, evaluate.epsilon_greedy_policy(learner, epsilon,
                                                             config.seed + env_steps), env_steps)


# Update kind of accel_tf/algorithms.py -> its policy read back from a run for common.evaluate.
POLICIES = {'actor_critic': _actor_critic_policy, 'ppo': _actor_critic_policy,
            'q_learning': _q_policy}


def load_policy(run_dir, greedy=False):
    """The trained policy of a run, for common.evaluate: (env_config, policy_fn, env_steps);
    for the Q-value family, greedy or epsilon-greedy at the run's final epsilon."""
    app.parse_recorded_config(run_dir, RENAMED)
    return POLICIES[config_lib.from_gin(refuse_unread=False).row.update](run_dir, greedy)


def compute(config):
    """Which processes compute: A3C's and APPO's learner processes (a GPU each, or sharing
    them), whose main process only counts and checkpoints, on the CPU; else the main process."""
    if config.row.loop != 'asynchronous':
        return devices.Placement()
    return devices.Placement(
        learners=config.num_learners,
        shared_gpu_memory_mb=config.async_learners.shared_gpu_memory_mb)


def memory(config):
    """What a run of the accelerated methods holds (common/launch/memory_check.py), per learner
    (A3C and APPO run num_learners, each a TensorFlow process with its own samplers): worker
    processes, simulators with their observations, the rollout, and the Q-value family's
    replay."""
    learners_ = config.num_learners
    env = config.env_config
    frame = mem.observation_bytes(env)
    processes = learners_ + (learners_ > 1)  # the learners, and the main process beside them
    needs = [mem.Need(f'TensorFlow processes: {processes}', processes * mem.TF_PROCESS_BYTES,
                      'AccelConfig.num_learners'),
             mem.Need(f'{learners_ * config.num_workers} worker processes',
                      learners_ * config.num_workers * mem.WORKER_PROCESS_BYTES,
                      'AccelConfig.num_workers'),
             mem.Need(f'{learners_ * config.num_envs:,} simulators',
                      learners_ * config.num_envs * (mem.EMULATOR_BYTES + 2 * frame),
                      'AccelConfig.envs_per_worker'),
             mem.Need('the rollouts', learners_ * (config.horizon + 1) * config.num_envs * frame,
                      'AccelConfig.horizon')]
    if config.q_values is not None:
        needs.append(mem.replay_need('QValueConfig.replay_capacity',
                                     config.q_values.replay_capacity, env))
    return needs


PAPER = entry.Paper('accel', configure, train, model_identity, cluster=True, compute=compute,
                    memory=memory)

if __name__ == '__main__':
    entry.main(PAPER)
