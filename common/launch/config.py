"""The fields every paper's training config shares, validated once, and the TF1 RMSProp settings
of the actor-critic papers.

A paper's config is a gin-configurable dataclass deriving from RunConfig (and RMSPropConfig where
it trains with TF1's RMSProp); its validate() calls super().validate() and then checks its own
fields. Types are checked first (a string where a number belongs is named in one line), then
ranges.
"""
import copy
import dataclasses
from typing import Any

import gin

from common.envs import atari
from common.envs import gym as gym_envs
from common.envs import pools
from common.scale.cluster import STRATEGIES
from common.system import checks
from common.system import errors
from common.system import machine_load
from common.system import native_dtype
from common.units import samplers

# networks.COMPUTE_DTYPES, named here too: this module must not import TensorFlow.
COMPUTE_DTYPES = ('float32', 'bfloat16')
# RunConfig.compute_dtype's value that resolve() makes the machine's native one.
AUTO_DTYPE = 'auto'

def require_env_config(owner, env_config):
    """Checks that owner's env_config is an Atari or gym config and that its values are valid."""
    checks.require(isinstance(env_config, (atari.AtariConfig, gym_envs.GymConfig)),
                   f'{owner}.env_config must be @AtariConfig() or @GymConfig(), got {env_config!r}')
    try:
        env_config.validate()
    except ValueError as error:
        raise errors.ConfigError(str(error))


@dataclasses.dataclass
class RunConfig:
    """What every run has: an environment, a length, a discount, a seed, a log and checkpoint
    cadence. Subclasses set their papers' defaults."""
    env_config: Any = None             # @AtariConfig() or @GymConfig()
    total_steps: int = 1               # environment steps (x frame skip frames)
    gamma: float = 0.99
    seed: int = 0
    log_every_seconds: float = 10.0
    checkpoint_every_steps: int = 1_000_000
    # Of the checkpoints the rotation drops, the first in each span of this many steps stays on
    # disk (0: none), so a late divergence or an evaluation of the past is never left with only
    # the newest three.
    milestone_every_steps: int = 5_000_000
    # XLA for every network call of acting, predicting and updating (common/learners/xla.py);
    # no paper's: off, which `python -m common.bench` measured faster on a CPU (BENCHMARKS.md).
    jit_compile: bool = False
    # 'bfloat16': the networks' torsos compute in bfloat16 on float32 variables, heads and losses
    # in float32 (common/learners/networks.py: COMPUTE_DTYPES); 'auto': bfloat16 where the CPU
    # or GPU runs it natively, float32 elsewhere (common/system/native_dtype.py), said on
    # the compute line. No paper's: 'float32'.
    compute_dtype: str = 'float32'
    # metrics.csv rows every this many env steps (at the first boundary at or past each
    # multiple) instead of every log_every_seconds; 0: by the clock.
    log_every_steps: int = 0
    # Two runs of the same preset and seed on the same machine write the same steps, episodes,
    # scores and losses (metrics.csv, episodes.csv): rows by log_every_steps, TensorFlow's
    # deterministic ops (common/system/devices.py, seed_exact); refused where threads decide what
    # trains (a paper's seed_exact_refusal). No paper's: off.
    seed_exact: bool = False
    # On a config that resolve() returned: field -> the value asked before it was resolved. A
    # class attribute, not a field: gin cannot bind it and dataclasses.replace does not copy it.
    asked = None

    @property
    def owner(self):
        """The name bindings use for this config, e.g. 'PAACConfig'."""
        return type(self).__name__

    def resolutions(self):
        """field -> value for each value the config leaves open, which resolve() sets once: an
        unset distribute (one device), compute_dtype 'auto' (the machine's native dtype). A
        paper's config adds its own ('auto' worker counts)."""
        changes = {}
        if getattr(self, 'distribute', False) is None:
            changes['distribute'] = DistributeConfig()
        if self.compute_dtype == AUTO_DTYPE:
            changes['compute_dtype'] = native_dtype.native_dtype()[0]
        return changes

    def validate(self):
        """Raises errors.ConfigError naming the first field of the wrong type or out of range;
        changes nothing (resolve() sets what is left open first)."""
        owner = self.owner
        checks.require_field_types(owner, self)
        require_env_config(owner, self.env_config)
        checks.require_positive_ints(owner, self, ('total_steps', 'checkpoint_every_steps'))
        checks.require(self.milestone_every_steps >= 0, f'{owner}.milestone_every_steps must be '
                       f'>= 0 (0: no milestones), got {self.milestone_every_steps}')
        checks.require(0 < self.gamma <= 1, f'{owner}.gamma must be in (0, 1], got {self.gamma}')
        checks.require(self.seed >= 0, f'{owner}.seed must be >= 0, got {self.seed}')
        self.require_choice('compute_dtype', COMPUTE_DTYPES + (AUTO_DTYPE,))
        checks.require(self.log_every_seconds > 0,
                       f'{owner}.log_every_seconds must be > 0, got {self.log_every_seconds}')
        checks.require(self.log_every_steps >= 0, f'{owner}.log_every_steps must be >= 0 (0: '
                       f'rows by the clock), got {self.log_every_steps}')

    def seed_exact_refusal(self):
        """Why this config's runs cannot be seed-exact (threads or processes decide what trains
        on what), or None; a paper's config names its own cases."""
        return None

    def validate_seed_exact(self):
        """ConfigError if seed_exact is asked where it cannot hold; resolve() calls it once the
        config is otherwise valid."""
        if not self.seed_exact:
            return
        owner = self.owner
        checks.require(self.log_every_steps > 0,
                       f'{owner}.seed_exact=True needs {owner}.log_every_steps > 0: rows logged '
                       'by the clock fall on other steps in every run')
        reason = self.seed_exact_refusal()
        checks.require(reason is None, f'{owner}.seed_exact=True: {reason}')

    def require_non_negative(self, names):
        for name in names:
            value = getattr(self, name)
            checks.require(value >= 0, f'{self.owner}.{name} must be >= 0, got {value!r}')

    def require_positive(self, names):
        for name in names:
            value = getattr(self, name)
            checks.require(value > 0, f'{self.owner}.{name} must be > 0, got {value!r}')

    def require_choice(self, name, allowed):
        value = getattr(self, name)
        checks.require(value in allowed, f'{self.owner}.{name}={value!r}; allowed: {allowed}')


@dataclasses.dataclass
class OverlapConfig:
    """Learning while sampling for the on-policy unit (common/units/on_policy.py): with
    overlap_learning, each rollout trains on a thread while the samplers collect the next with
    the parameters from before that update (one update of policy lag, as APPO's), where the
    papers sample, then learn. No paper's: off in every preset."""
    overlap_learning: bool = False

    def validate_overlap(self, distribute_config):
        """Raises ConfigError if overlap_learning is asked with several devices or machines
        (the acting copy of the parameters is built for one)."""
        strategy = getattr(distribute_config, 'strategy', 'none')
        checks.require(not self.overlap_learning or strategy == 'none',
                       f'{type(self).__name__}.overlap_learning=True needs one device; got '
                       f'DistributeConfig.strategy={strategy!r} (allowed with it: \'none\')')

    def overlap_seed_exact_refusal(self):
        """Why a sampled run with this config cannot be seed-exact (RunConfig.seed_exact): its
        update on a thread beside the sampling, or its machines; None otherwise."""
        if self.overlap_learning:
            return 'overlap_learning=True trains on a thread while the next rollout samples'
        if getattr(getattr(self, 'distribute', None), 'strategy', 'none') == 'multi_worker':
            return "DistributeConfig.strategy='multi_worker' runs over several processes"
        return None


# The torso activations whose backward pass common/learners/activation_reuse.py holds.
REUSABLE_ACTIVATIONS = ('relu', 'tanh', 'linear')


@dataclasses.dataclass
class ActingPassConfig:
    """Reusing the acting pass in the on-policy update (common/learners/activation_reuse.py):
    the update takes the torso outputs the rollout's policy calls computed instead of a forward
    pass of its own, for a run whose update trains the parameters that acted (PAAC, A2C); the
    same gradients, one forward pass fewer."""
    reuse_activations: bool = False

    def validate_reuse(self, sampler, distribute_config, overlap_learning, jit_compile,
                       gae_lambda=None, torso_kwargs=None):
        """Raises ConfigError if reuse_activations is asked where the update cannot take the
        acting pass's outputs as its own (common/learners/activation_reuse.py)."""
        if not self.reuse_activations:
            return
        name = f'{type(self).__name__}.reuse_activations=True'
        strategy = getattr(distribute_config, 'strategy', 'none')
        activation = (torso_kwargs or {}).get('activation', 'relu')
        for ok, setting, allowed in (
                (sampler == 'synchronized', f'sampler={sampler!r}', "'synchronized'"),
                (strategy == 'none', f'DistributeConfig.strategy={strategy!r}', "'none'"),
                (not overlap_learning, 'overlap_learning=True', 'False'),
                (not jit_compile, 'jit_compile=True', 'False'),
                (gae_lambda is None, f'gae_lambda={gae_lambda!r}', 'None (n-step returns)'),
                (activation in REUSABLE_ACTIVATIONS, f'a torso activation {activation!r}',
                 f'one of {REUSABLE_ACTIVATIONS}')):
            checks.require(ok, f'{name} cannot run with {setting} (allowed with it: {allowed})')


@dataclasses.dataclass
class RMSPropConfig:
    """TF1's tf.train.RMSPropOptimizer as the PAAC and GA3C codes ran it: epsilon inside the
    square root and mean squares starting at ones (tf.keras: outside, and zeros)."""
    learning_rate: float = 1e-3
    rmsprop_decay: float = 0.99
    rmsprop_epsilon: float = 0.1
    rmsprop_epsilon_inside_sqrt: bool = True
    rmsprop_initial_mean_square: float = 1.0
    rmsprop_centered: bool = False  # DeepMind's DQN RMSProp (Mnih et al. 2015) divides by the
                                    # standard deviation of the gradient, not its RMS

    def validate_rmsprop(self):
        owner = type(self).__name__
        checks.require(self.learning_rate > 0,
                       f'{owner}.learning_rate must be > 0, got {self.learning_rate!r}')
        checks.require(0 < self.rmsprop_decay < 1,
                       f'{owner}.rmsprop_decay must be in (0, 1), got {self.rmsprop_decay!r}')
        checks.require(self.rmsprop_epsilon > 0,
                       f'{owner}.rmsprop_epsilon must be > 0, got {self.rmsprop_epsilon!r}')
        checks.require(self.rmsprop_initial_mean_square >= 0,
                       f'{owner}.rmsprop_initial_mean_square must be >= 0, '
                       f'got {self.rmsprop_initial_mean_square!r}')



@gin.configurable
@dataclasses.dataclass
class DistributeConfig:
    """Several devices for one run (Stooke & Abbeel 2018, section 4.2): 'mirrored' splits every
    batch over num_replicas replicas (a GPU each, or logical CPU devices where there is no GPU;
    more replicas than GPUs is refused: common/system/devices.py, mirrored_problem),
    averages their gradients and applies one update to every replica's copy
    (common/scale/distribute.py); 'multi_worker': the same over the processes TF_CONFIG names, each
    with its own data; 'none': one device."""
    strategy: str = 'none'
    num_replicas: int = 1

    def validate(self, num_envs, owner):
        """Raises errors.ConfigError naming the first bad value; num_envs: the run's simulators,
        split evenly over the replicas."""
        checks.require_field_types('DistributeConfig', self)
        checks.require(self.strategy in STRATEGIES,
                       f'DistributeConfig.strategy={self.strategy!r}; allowed: {STRATEGIES}')
        checks.require(self.num_replicas >= 1,
                       f'DistributeConfig.num_replicas must be >= 1, got {self.num_replicas}')
        checks.require(self.strategy == 'mirrored' or self.num_replicas == 1,
                       f"DistributeConfig.num_replicas={self.num_replicas} needs strategy="
                       f"'mirrored', got {self.strategy!r}")
        checks.require(num_envs % self.num_replicas == 0,
                       f'{owner}: {num_envs} simulators do not split evenly over '
                       f'DistributeConfig.num_replicas={self.num_replicas}')


def sampler_replicas(distribute_config):
    """Replicas that sample apart, each with its own sampler groups: a one-machine mirrored
    run's (every worker of a multi-worker run samples its share with one set of groups)."""
    if distribute_config is None or distribute_config.strategy != 'mirrored':
        return 1
    return distribute_config.num_replicas


def sampler_groups(sampler, distribute_config):
    """The environment pool's worker groups for sampler kind sampler under distribute_config."""
    return samplers.num_groups(sampler, sampler_replicas(distribute_config))


def require_sampler_groups(owner, sampler, num_workers, distribute_config):
    """Raises errors.ConfigError unless num_workers environment processes split evenly into the
    sampler's groups (two for 'alternating') of every replica that samples apart. Pools of
    another kind (make_pool.kind) have no worker processes: their own validate checks that the
    environments split into the groups."""
    groups = sampler_groups(sampler, distribute_config)
    if num_workers % groups == 0 or pools.configured_kind() != 'process':
        return
    replicas = sampler_replicas(distribute_config)
    if replicas == 1:
        raise errors.ConfigError(f"{owner}.sampler={sampler!r} needs an even num_workers (two "
                                 f'groups), got {num_workers}')
    raise errors.ConfigError(
        f'{owner}.num_workers={num_workers} does not split into {groups} sampler groups '
        f'({groups // replicas} per replica of DistributeConfig.num_replicas={replicas}, each '
        f'replica sampling its own simulators)')


AUTO_WORKERS = 'auto'


def resolve_num_workers(owner, num_workers, num_envs, groups=1, cores=None):
    """num_workers as an int: itself, or for 'auto' the most environment processes this machine
    has cores for (machine_load.usable_cores) that split num_envs and the sampler's groups
    evenly, so the algorithm's batch (num_envs) never changes with the machine. ConfigError
    naming the value otherwise."""
    if num_workers != AUTO_WORKERS:
        checks.require(isinstance(num_workers, int) and not isinstance(num_workers, bool)
                       and num_workers > 0,
                       f'{owner}.num_workers must be a positive integer or {AUTO_WORKERS!r} '
                       f'(as many as this machine has cores), got {num_workers!r}')
        return num_workers
    cores = machine_load.usable_cores() if cores is None else cores
    fitting = [count for count in range(groups, num_envs + 1, groups)
               if num_envs % count == 0 and count <= max(cores, groups)]
    checks.require(fitting, f'{owner}.num_workers={AUTO_WORKERS!r}: no count of {groups} or more '
                         f'splits num_envs={num_envs} into {groups} group(s)')
    return fitting[-1]


def require_cluster_split(owner, num_machines, **totals):
    """Raises errors.ConfigError naming the first of a run's counts (simulators, environment
    processes) that does not split evenly over a multi-worker cluster's machines."""
    for name, total in totals.items():
        checks.require(total % num_machines == 0,
                       f'{owner}.{name}={total} does not split evenly over the '
                       f'{num_machines} machines of the cluster')


def resolve(config):
    """The one place where a config's open values become values: a copy of config with
    config.resolutions() set, its .asked holding what they were, validated (ConfigError naming
    the first bad value). The config given is not changed; nothing changes the copy after."""
    changes = config.resolutions()
    resolved = dataclasses.replace(config, **changes)
    resolved.asked = {name: getattr(config, name) for name in changes}
    resolved.validate()
    resolved.validate_seed_exact()
    return resolved


def with_machine_dtype(config):
    """A copy of config with compute_dtype 'auto' set to this machine's native dtype, as resolve()
    sets it for a run: for a run's recorded config read back to evaluate its policy."""
    if config.compute_dtype != AUTO_DTYPE:
        return config
    machine = copy.copy(config)
    machine.compute_dtype = native_dtype.native_dtype()[0]
    return machine


def resolved_record(config):
    """What a run records of its resolution (run.json, each session): 'Owner.field' -> the value
    asked and the value resolved, for every field resolve() set."""
    def plain(value):
        return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
    return {f'{config.owner}.{name}': {'asked': plain(asked),
                                       'resolved': plain(getattr(config, name))}
            for name, asked in sorted((config.asked or {}).items())}


def resolve_sampled_run(config, pin_cpus=False):
    """resolve() for a run sampling from a pool, then the pool's settings checked for the
    sampler's groups, before anything starts."""
    config = resolve(config)
    try:
        pools.validate_pool_config(config.env_config, config.num_envs, config.num_workers,
                                   num_groups=sampler_groups(config.sampler, config.distribute),
                                   pin_cpus=pin_cpus)
    except ValueError as error:
        raise errors.ConfigError(f'make_pool: {error}')
    return config


def renamed_bindings(owner):
    """RMSProp bindings that moved into a paper's config: old name -> what to bind instead."""
    return {f'RMSProp.{old}': f'bind {owner}.{new} instead' for old, new in (
        ('epsilon_inside_sqrt', 'rmsprop_epsilon_inside_sqrt'),
        ('initial_mean_square', 'rmsprop_initial_mean_square'),
        ('learning_rate', 'learning_rate'), ('decay', 'rmsprop_decay'),
        ('epsilon', 'rmsprop_epsilon'))}
