"""The accelerated methods' algorithms (Stooke & Abbeel 2018), one row each: what the rest of
accel_tf/ decides by. Data only; the code each value selects is in the tables keyed by it:
kinds.LOOPS (loop: trainer, devices), kinds.UPDATES (update: learner builder, actor-learner,
policy for evaluation), config.SECTIONS (sections). tests/accel_tf/test_algorithms.py fails if
a row names a value one of them lacks, or if an algorithm has no preset gin/accel/<name>_pong.gin.

Adding an algorithm: a row here, its learner (a builder for a new update kind), a cited preset
and its tests (docs/papers/accelerated_methods.md, "Add an algorithm").
"""
import dataclasses
from typing import Optional, Tuple

# How a run is driven: the on-policy unit over the sampler (section 4), the off-policy phases
# over replay (sections 5.2-5.3), or learner processes on one central store (section 5.1).
LOOPS = ('on_policy', 'q_values', 'asynchronous')
# What one update does: the n-step or GAE actor-critic gradient, PPO's clipped objective in
# epochs x minibatches steps, or a Q-learning minibatch step (categorical when the row says so).
UPDATES = ('actor_critic', 'ppo', 'q_learning')


@dataclasses.dataclass(frozen=True)
class Algorithm:
    """One algorithm. sections: the config sections it reads besides AccelConfig (a binding to
    any other section is refused); optimizer: the only AccelConfig.optimizer it can use, None
    if any; strategies: the DistributeConfig.strategy values it is built for; schedules: whether
    the learning rate (and PPO's ratio clip) can be annealed; categorical: a Q-value algorithm
    over QValueConfig.num_atoms >= 2 atoms (False: one value per action)."""
    name: str
    loop: str
    update: str
    sections: Tuple[str, ...]
    optimizer: Optional[str] = None
    needs_gae: bool = False
    strategies: Tuple[str, ...] = ('none',)
    schedules: bool = True
    categorical: bool = False


SYNCHRONOUS = ('none', 'mirrored', 'multi_worker')   # section 4.2, one machine or several

ROWS = (
    Algorithm('a2c', loop='on_policy', update='actor_critic', sections=('ActorCriticConfig',),
              strategies=SYNCHRONOUS),
    Algorithm('ppo', loop='on_policy', update='ppo',
              sections=('ActorCriticConfig', 'PPOConfig'), needs_gae=True,
              strategies=SYNCHRONOUS),
    # A3C: RMSProp with the central mean squares on the store; APPO: Appendix B's multi-step
    # asynchronous Adam. Neither has a schedule (App. A.3), nor a multi-device form: the store is
    # one machine's shared memory.
    Algorithm('a3c', loop='asynchronous', update='actor_critic',
              sections=('ActorCriticConfig', 'AsyncLearnersConfig'), optimizer='rmsprop',
              schedules=False),
    Algorithm('appo', loop='asynchronous', update='ppo',
              sections=('ActorCriticConfig', 'PPOConfig', 'AsyncLearnersConfig', 'APPOConfig'),
              optimizer='adam', needs_gae=True, schedules=False),
    Algorithm('dqn', loop='q_values', update='q_learning', sections=('QValueConfig',),
              strategies=SYNCHRONOUS),
    Algorithm('cat_dqn', loop='q_values', update='q_learning', sections=('QValueConfig',),
              strategies=SYNCHRONOUS, categorical=True),
    # eps-Rainbow: categorical DQN's row; double, dueling, n-step and prioritized replay are
    # QValueConfig values (gin/accel/rainbow_pong.gin).
    Algorithm('rainbow', loop='q_values', update='q_learning', sections=('QValueConfig',),
              strategies=SYNCHRONOUS, categorical=True),
)
BY_NAME = {row.name: row for row in ROWS}
NAMES = tuple(BY_NAME)


def built_for(strategy):
    """The names of the algorithms built for a DistributeConfig.strategy, in table order."""
    return tuple(row.name for row in ROWS if strategy in row.strategies)


def reading(section):
    """The names of the algorithms that read a config section, in table order."""
    return tuple(row.name for row in ROWS if section in row.sections)
