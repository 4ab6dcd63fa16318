"""The accelerated methods' config (Stooke & Abbeel 2018): AccelConfig holds what every algorithm
reads (environment, sampler, network, optimizer, length), and the sections of
accel_tf/sections.py and accel_tf/q_config.py what only some read; the algorithm's row
(accel_tf/algorithms.py) names the sections it reads. The defaults are A2C's; gin/accel/*.gin
set each algorithm's values and cite them.

A binding to a section the algorithm does not read, or to a field that moved out of AccelConfig
(RENAMED), is refused in one line: nothing bound is silently ignored.
"""
import dataclasses
import math
from typing import Any, Optional

import gin

from accel_tf import algorithms
from accel_tf import q_config
from accel_tf import sections
from common.launch import config as config_lib
from common.learners import networks
from common.system import checks
from common.system import errors
from common.units import samplers
# Registers AtariConfig and GymConfig with gin, which the presets bind before any env exists.
from common.envs import atari  # noqa: F401
from common.envs import gym as gym_envs  # noqa: F401

OPTIMIZERS = ('rmsprop', 'adam')
LEARNING_RATE_SCALINGS = ('sqrt', 'none')
# The algorithms that sample, then learn (the on-policy unit): overlap_learning applies to them.
ON_POLICY = tuple(row.name for row in algorithms.ROWS if row.loop == 'on_policy')
# One update per rollout of the parameters that acted (A2C): reuse_activations applies to them.
REUSING = tuple(row.name for row in algorithms.ROWS
                if row.loop == 'on_policy' and row.update == 'actor_critic')

# Section name (as rows and bindings spell it) -> its class.
SECTIONS = {cls.__name__: cls for cls in (
    sections.ActorCriticConfig, sections.PPOConfig, sections.AsyncLearnersConfig,
    sections.APPOConfig, q_config.QValueConfig)}
# The sections' fields that were AccelConfig's before the sections (QValueConfig's never were).
MOVED_OUT_OF_ACCEL = (sections.ActorCriticConfig, sections.PPOConfig,
                      sections.AsyncLearnersConfig, sections.APPOConfig)
# Old binding -> its name now, for each field that moved out of the flat AccelConfig (refused in
# one line naming the section: RENAMED).
MOVED = {f'AccelConfig.{field.name}': f'{cls.__name__}.{field.name}'
         for cls in MOVED_OUT_OF_ACCEL for field in dataclasses.fields(cls)}
# Old binding -> its name now, read as that name with a one-line notice: a learner is the object
# that updates, an actor-learner what each asynchronous process iterates (docs/code_map.md).
READ_AS = {'AccelConfig.num_learners': 'AccelConfig.num_actor_learners'}


def _renamed():
    """Old binding -> what to do instead, for presets and user files of the flat AccelConfig."""
    renamed = {}
    for old, new in MOVED.items():
        readers = ', '.join(algorithms.reading(new.split('.')[0]))
        renamed[old] = f'bind {new} instead (read by algorithm {readers})'
    renamed['AccelConfig.q_values'] = (
        'remove it: QValueConfig is read without it by algorithm '
        f"{', '.join(algorithms.reading('QValueConfig'))}")
    return renamed


RENAMED = _renamed()


@gin.configurable(denylist=[cls.FIELD for cls in SECTIONS.values()])
@dataclasses.dataclass
class AccelConfig(config_lib.ActingPassConfig, config_lib.OverlapConfig, config_lib.RMSPropConfig,
                  config_lib.RunConfig):
    """One run of an algorithm of accel_tf/algorithms.py on the synchronized or alternating
    sampler (section 4.1); for A3C and APPO, every field but num_actor_learners describes one
    actor-learner. The section fields are set by from_gin() (or given when built in Python): the
    sections the algorithm's row names, None for the others."""
    env_config: Any = None              # @AtariConfig() or @GymConfig()
    algorithm: str = 'a2c'              # a name in accel_tf/algorithms.py
    total_steps: int = 10_000_000       # environment steps (x frame skip frames)
    # Sampling (section 4.1): num_workers processes step envs_per_worker simulators each.
    sampler: str = 'synchronized'       # 'synchronized' | 'alternating' (two env groups)
    num_workers: int = 2                # n worker processes
    envs_per_worker: int = 8            # m simulators stepped in sequence by each worker
    pin_cpus: bool = False              # pin worker i to CPU i (mod the CPUs usable; learner k of
                                        # A3C/APPO from CPU k x num_workers on)
    horizon: int = 5                    # sampling horizon T: a batch is T x num_envs
    network: str = 'a3c_net'
    torso_kwargs: Optional[dict] = None  # e.g. {'hidden_sizes': (64, 64)} for 'mlp'
    initializer: str = 'fan_in_uniform'
    # Optimization
    optimizer: str = 'rmsprop'          # 'rmsprop' (RMSPropConfig's fields) | 'adam'
    learning_rate: float = 7e-4
    # 'sqrt': learning_rate * sqrt(num_envs / learning_rate_base_envs) (Appendix A.3); 'none'.
    learning_rate_scaling: str = 'sqrt'
    learning_rate_base_envs: int = 16
    anneal_learning_rate: bool = False  # linearly to 0 over total_steps environment steps
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-5
    # Learner processes on one central store, each iterating an actor-learner (section 5.1): more
    # than 1 only for the asynchronous algorithms (A3C, APPO); the others train one learner.
    num_actor_learners: int = 1
    # The sections (accel_tf/sections.py, accel_tf/q_config.py); not gin bindings.
    actor_critic: Optional[sections.ActorCriticConfig] = None
    ppo: Optional[sections.PPOConfig] = None
    async_learners: Optional[sections.AsyncLearnersConfig] = None
    appo: Optional[sections.APPOConfig] = None
    q_values: Optional[q_config.QValueConfig] = None
    # Several devices (section 4.2): a common.launch.config.DistributeConfig; None until configure()
    # sets the one DistributeConfig's bindings make.
    distribute: Any = None

    @property
    def row(self):
        """The algorithm's row of accel_tf/algorithms.py."""
        return algorithms.BY_NAME[self.algorithm]

    def evaluation_protocol(self):
        """The run's evaluation protocol: QValueConfig.eval_protocol for the Q-value family,
        ActorCriticConfig.eval_protocol for the policy-gradient algorithms."""
        section = self.q_values if self.q_values is not None else self.actor_critic
        return section.evaluation_protocol(self.env_config)

    def read_sections(self):
        """The sections the algorithm reads, in its row's order."""
        return [getattr(self, SECTIONS[name].FIELD) for name in self.row.sections]

    @property
    def num_envs(self):
        return self.num_workers * self.envs_per_worker

    @property
    def steps_per_update(self):
        """Environment steps per optimization phase (one batch)."""
        return self.num_envs * self.horizon

    @property
    def scaled_learning_rate(self):
        """The learning rate for this number of environments (Appendix A.3: A2C's rate grows
        with the square root of the batch, 7e-4 at 16 environments)."""
        if self.learning_rate_scaling == 'none':
            return self.learning_rate
        return self.learning_rate * math.sqrt(self.num_envs / self.learning_rate_base_envs)

    def seed_exact_refusal(self):
        if 'AsyncLearnersConfig' in self.row.sections:
            return (f'algorithm={self.algorithm!r} runs asynchronous learner processes, whose '
                    'updates interleave by timing')
        q_values = self.q_values
        if q_values is not None and q_values.asynchronous:
            return 'QValueConfig.asynchronous=True trains on a thread while the next phase samples'
        if q_values is not None and q_values.replay_input != 'direct':
            return (f'QValueConfig.replay_input={q_values.replay_input!r} draws minibatches on a '
                    "prefetching thread ('direct' draws them in turn)")
        return self.overlap_seed_exact_refusal()

    def validate(self):
        """Raises ConfigError naming the first value of the wrong type or out of range."""
        super().validate()
        self.validate_rmsprop()
        require = checks.require
        self.require_choice('algorithm', algorithms.NAMES)
        self.require_choice('sampler', samplers.SAMPLERS)
        checks.require_positive_ints(self.owner, self, (
            'num_workers', 'envs_per_worker', 'horizon', 'learning_rate_base_envs',
            'num_actor_learners'))
        self.require_choice('network', networks.NETWORK_NAMES)
        self.require_choice('initializer', networks.INITIALIZERS)
        self.require_choice('optimizer', OPTIMIZERS)
        self.require_choice('learning_rate_scaling', LEARNING_RATE_SCALINGS)
        require(0 <= self.adam_beta1 < 1 and 0 <= self.adam_beta2 < 1,
                f'AccelConfig.adam_beta1 and adam_beta2 must be in [0, 1), got '
                f'{self.adam_beta1} and {self.adam_beta2}')
        self.require_positive(('adam_epsilon',))
        self._validate_row()
        for section in self.read_sections():
            section.validate(self)
        if self.distribute is not None:
            self._validate_distribute()
        config_lib.require_sampler_groups(self.owner, self.sampler, self.num_workers,
                                          self.distribute)
        self.validate_overlap(self.distribute)
        checks.require(not self.overlap_learning or self.row.loop == 'on_policy',
                       f'AccelConfig.overlap_learning=True; algorithm={self.algorithm!r} does not '
                       f"sample then learn (allowed for: {', '.join(ON_POLICY)})")
        checks.require(not self.reuse_activations or (self.row.loop, self.row.update) == (
                           'on_policy', 'actor_critic'),
                       f'AccelConfig.reuse_activations=True; algorithm={self.algorithm!r} does not '
                       f"train once per rollout on the parameters that acted (allowed for: "
                       f"{', '.join(REUSING)})")
        self.validate_reuse(self.sampler, self.distribute, self.overlap_learning,
                            self.jit_compile, getattr(self.actor_critic, 'gae_lambda', None),
                            self.torso_kwargs)

    def _validate_row(self):
        """What the algorithm's row asks of AccelConfig: its optimizer, no schedule where it has
        none, one learner unless asynchronous, and exactly the sections it reads."""
        row = self.row
        checks.require(row.optimizer is None or self.optimizer == row.optimizer,
                       f"AccelConfig.optimizer={self.optimizer!r}; algorithm={row.name!r} "
                       f"updates the central store with {row.optimizer!r} only")
        checks.require(row.schedules or not self.anneal_learning_rate,
                       f'AccelConfig.anneal_learning_rate=True; not available for algorithm='
                       f'{row.name!r} (no schedule, Appendix A.3)')
        asynchronous = algorithms.reading('AsyncLearnersConfig')
        checks.require(self.num_actor_learners == 1 or row.name in asynchronous,
                       f'AccelConfig.num_actor_learners={self.num_actor_learners}; algorithm={row.name!r} '
                       f'trains one learner (learner processes: algorithm '
                       f"{', '.join(asynchronous)})")
        for name, cls in SECTIONS.items():
            value = getattr(self, cls.FIELD)
            if name in row.sections:
                checks.require(isinstance(value, cls),
                               f'algorithm={row.name!r} needs AccelConfig.{cls.FIELD} = {name}(), '
                               f'got {value!r}')
            else:
                checks.require(value is None,
                               f'AccelConfig.{cls.FIELD} is set, but algorithm {row.name!r} does '
                               f'not read {name}; leave it None')

    def _validate_distribute(self):
        distribute = self.distribute
        distribute.validate(self.num_envs, 'AccelConfig')
        if distribute.strategy == 'none':
            return
        row = self.row
        checks.require(distribute.strategy in row.strategies,
                       f"DistributeConfig.strategy={distribute.strategy!r} is built for algorithm "
                       f"{', '.join(algorithms.built_for(distribute.strategy))}, not {row.name!r}")
        for section in self.read_sections():
            section.validate_distribute(self, distribute)

    def validate_cluster(self, num_machines):
        """Raises ConfigError unless the run's simulators and environment processes split
        evenly over a multi-worker cluster's machines (each runs its share with its own sampler)
        and each section's batches (PPO's minibatches, the Q-value family's replay
        minibatches) over their local batches."""
        config_lib.require_cluster_split(self.owner, num_machines,
                                         num_workers=self.num_workers, num_envs=self.num_envs)
        for section in self.read_sections():
            section.validate_cluster(self, num_machines)


def refuse_unread_bindings(row):
    """Raises ConfigError naming the bound parameters (gin's bindings of the section classes)
    of the first section that row's algorithm does not read."""
    for name, cls in SECTIONS.items():
        if name in row.sections:
            continue
        bound = sorted(gin.get_bindings(cls, resolve_references=False))
        if bound:
            names = ', '.join(f'{name}.{parameter}' for parameter in bound)
            raise errors.ConfigError(
                f"{names} {'is' if len(bound) == 1 else 'are'} bound, but algorithm "
                f"{row.name!r} does not read {name}; remove the binding (it reads "
                f"{', '.join(('AccelConfig',) + row.sections)})")


def from_gin(refuse_unread=True):
    """The AccelConfig of the parsed gin config with the sections its algorithm reads, each
    built from its own bindings; refuses a bound section it does not read unless refuse_unread
    is False (a run's recorded config, read back for evaluation). Not yet validated."""
    config = AccelConfig()
    checks.require_field_types(config.owner, config)
    config.require_choice('algorithm', algorithms.NAMES)
    row = config.row
    if refuse_unread:
        refuse_unread_bindings(row)
    for name in row.sections:
        cls = SECTIONS[name]
        setattr(config, cls.FIELD, cls())
    return config
