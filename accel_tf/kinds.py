"""The one place the values of an algorithm row (accel_tf/algorithms.py) select code: per loop
kind, what trains it and where it computes (LOOPS); per update kind, its learner builder, its
actor-learner and the policy common.evaluate plays from a run (UPDATES). Rows stay data only;
tests/accel_tf/test_algorithms.py checks that every value a row names is a key here."""
import contextlib
import dataclasses
from typing import Callable, Optional

from accel_tf import actor_learners
from accel_tf import config as config_lib
from accel_tf import learners
from accel_tf import q_family
from common import evaluate
from common.launch import app
from common.launch import config as common_config
from common.scale import distribute
from common.scale import multi_worker
from common.system import devices
from common.units import async_learners
from common.units import on_policy
from common.units import samplers


@dataclasses.dataclass(frozen=True)
class Loop:
    """What a loop kind selects. train(config, run_dir, make_pool(config, seed)): runs config's
    algorithm, returns the environment steps reached; compute(config): which processes compute
    (a devices.Placement)."""
    train: Callable
    compute: Callable


@dataclasses.dataclass(frozen=True)
class Update:
    """What an update kind selects. build(config): its learner; actor_learner: the class one
    learner process of the asynchronous loop iterates (its OPTIMIZER the one the rows of the kind
    force), None if the kind has none; load_policy(run_dir, greedy, renamed, choice): its policy
    read back from a run, for common.evaluate."""
    build: Callable
    actor_learner: Optional[type]
    load_policy: Callable


def build_learner(config, strategy=None):
    """The learner of config's algorithm (its row's update kind), with config's network and
    optimizer, under strategy's scope if given (its updates then run on every replica)."""
    if strategy is not None:
        with strategy.scope():
            return build_learner(config)
    return UPDATES[config.row.update].build(config)


# Training, by loop kind.

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
    """A2C and PPO: the on-policy unit over the sampler (section 4)."""
    strategy, pool_for = _sampling(config, make_pool)
    learner = build_learner(config, strategy)
    return on_policy.train(config, run_dir, learner, pool_for, config.sampler, config.horizon,
                           config.num_envs, strategy, config.overlap_learning)


def _train_q_values(config, run_dir, make_pool):
    """The Q-value family: the off-policy phases over replay (sections 5.2-5.3)."""
    strategy, pool_for = _sampling(config, make_pool)
    return q_family.train(config, run_dir, build_learner(config, strategy), pool_for, strategy)


def actor_learner_class(config):
    """The actor-learner of config's asynchronous algorithm."""
    return UPDATES[config.row.update].actor_learner


@contextlib.contextmanager
def open_actor_learner(config, store, seed, index):
    """config's actor-learner in learner process index: its own learner, pool (its workers pinned
    after the other learners' with pin_cpus) and sampler."""
    # The actor-learner's seed for its action sampling; its initial parameters are the store's.
    learner = build_learner(dataclasses.replace(config, seed=seed))
    with learners.open_pool(config, seed, learner_index=index) as pool:
        sampler = samplers.make_sampler(config.sampler, pool, config.horizon)
        yield actor_learner_class(config)(config, learner, sampler, store, seed)


def slot_initial_values(config):
    """The central optimizer statistics and where they start."""
    return actor_learner_class(config).slot_initial_values(config)


def _train_asynchronous(config, run_dir, make_pool):
    """A3C and APPO: config.num_actor_learners learner processes, each iterating its actor-learner on
    one central store (section 5.1), until total_steps."""
    del make_pool  # each learner process opens its own pool (open_actor_learner)
    model = build_learner(config).model
    settings = config.async_learners
    return async_learners.train(config, run_dir, model, open_actor_learner, config.num_actor_learners,
                                settings.num_chunks, slot_initial_values(config),
                                actor_learner_class(config).STATS,
                                on_learner_death=settings.on_learner_death,
                                shared_gpu_memory_mb=settings.shared_gpu_memory_mb)


def _main_process(config):
    """The synchronous loops compute in the main process."""
    del config
    return devices.Placement()


def _learner_processes(config):
    """A3C's and APPO's learner processes compute (a GPU each, or sharing them); their main
    process only counts and checkpoints, on the CPU."""
    return devices.Placement(
        learners=config.num_actor_learners,
        shared_gpu_memory_mb=config.async_learners.shared_gpu_memory_mb)


LOOPS = {'on_policy': Loop(_train_on_policy, _main_process),
         'q_values': Loop(_train_q_values, _main_process),
         'asynchronous': Loop(_train_asynchronous, _learner_processes)}


def train(config, run_dir, make_pool=learners.open_pool):
    """Runs config's algorithm until config.total_steps, resuming from run_dir's checkpoint."""
    return LOOPS[config.row.loop].train(config, run_dir, make_pool)


def compute(config):
    """Which processes compute: config's loop kind says."""
    return LOOPS[config.row.loop].compute(config)


# Policies read back from a run, by update kind.

def _actor_critic_policy(run_dir, greedy, renamed, choice):
    return evaluate.actor_critic_policy(run_dir, lambda: config_lib.from_gin(refuse_unread=False),
                                        build_learner, greedy, obsolete=renamed,
                                        moved=config_lib.READ_AS, choice=choice)


def _q_policy(run_dir, greedy, renamed, choice):
    from common.run import checkpoint as checkpoint_lib  # pylint: disable=import-outside-toplevel
    app.parse_recorded_config(run_dir, renamed, moved=config_lib.READ_AS)
    config = common_config.with_machine_dtype(config_lib.from_gin(refuse_unread=False))
    protocol = evaluate.run_protocol(config, 'q_values', greedy, choice)
    learner = learners.build_q_learner(config)
    env_steps = checkpoint_lib.restore_latest(run_dir, online=learner.online)
    return (config.env_config, evaluate.q_value_policy(learner, protocol,
                                                       config.seed + env_steps), env_steps)


UPDATES = {'actor_critic': Update(learners.build_actor_critic_learner,
                                  actor_learners.A3CActorLearner, _actor_critic_policy),
           'ppo': Update(learners.build_ppo_learner, actor_learners.APPOActorLearner,
                         _actor_critic_policy),
           'q_learning': Update(learners.build_q_learner, None, _q_policy)}


def load_policy(run_dir, greedy, renamed, choice=None):
    """The trained policy of a run, for common.evaluate: (env_config, policy_fn, env_steps);
    acting by the run's evaluation protocol (for the Q-value family epsilon-greedy at its
    epsilon, 'stooke': 0.001; greedy: epsilon 0), or choice's over it. renamed: the obsolete
    bindings a recorded config is read without (main.RENAMED); names of config_lib.READ_AS
    are read as their names now."""
    app.parse_recorded_config(run_dir, renamed, moved=config_lib.READ_AS)
    return UPDATES[config_lib.from_gin(refuse_unread=False).row.update].load_policy(
        run_dir, greedy, renamed, choice)
