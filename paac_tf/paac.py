"""PAAC (Clemente et al. 2017, Algorithm 1): ne environments stepped by nw worker processes, one
batched policy/value forward per time step, one update on the ne * horizon batch every horizon
(the paper's tmax) steps.

PAAC is a composition of shared pieces: the on-policy unit (common/units/on_policy.py) drives a
sampler (common/units/samplers.py) over a pool of worker processes and the actor-critic learner
(common/learners/actor_critic.py). What is PAAC's own is its config (section 5.1 and the authors'
code)."""
import dataclasses
from typing import Any, Optional, Union

import gin

from common.envs import eval_protocols
from common.envs import pools
from common.launch import config as config_lib
from common.learners import actor_critic
from common.learners import networks
from common.learners import optim
from common.scale import distribute
from common.scale import multi_worker
from common.system import checks
from common.units import on_policy
from common.units import samplers
# Registers AtariConfig and GymConfig with gin, which the presets bind before any env exists.
from common.envs import atari  # noqa: F401
from common.envs import gym as gym_envs  # noqa: F401


@gin.configurable
@dataclasses.dataclass
class PAACConfig(config_lib.ActingPassConfig, config_lib.OverlapConfig, config_lib.RMSPropConfig,
                 config_lib.RunConfig):
    """Every PAAC knob; defaults are the paper's (section 5.1) and, where the paper's scores came
    from the code, the code's (alfredvc/paac); gin/paac/*.gin cite each."""
    env_config: Any = None             # @AtariConfig() or @GymConfig()
    num_envs: int = 32                 # ne
    # nw worker processes stepping ne/nw environments each; 'auto': as many as this machine has
    # cores for (common.launch.config.resolve_num_workers), ne unchanged
    num_workers: Union[int, str] = 8
    horizon: int = 5                   # tmax (section 5.1)
    total_steps: int = 115_000_000     # Nmax, in agent steps (x4 frames)
    # 'synchronized': all ne step, then one forward (Algorithm 1); 'alternating': Stooke &
    # Abbeel's schedule over two groups of workers, the same actions' distribution and data.
    sampler: str = 'synchronized'
    network: str = 'nips'              # archnips; 'nature' for archnature
    initializer: str = 'fan_in_uniform'  # the code's U(+-1/sqrt(fan_in)); 'glorot_uniform': Keras
    learning_rate: float = 0.0224      # 0.0007 * ne
    # Section 5.2's rule for other ne: alpha = learning_rate_per_env * ne (0.0007 there); when
    # set, it replaces learning_rate (None: learning_rate as bound).
    learning_rate_per_env: Optional[float] = None
    final_learning_rate: float = 0.0   # annealed linearly ...
    anneal_steps: Optional[int] = None  # ... over this many agent steps (None: total_steps)
    entropy_coef: float = 0.01         # beta
    # The loss as the authors' code computes it (alfredvc/paac policy_v_network.py):
    # loss_scale * (mean actor objective + value_loss_coef * mean (R - V)^2). Equations (10)-(11)
    # print the plain means (loss_scale 1, value_loss_coef 1); the code's 5 restores the sum over
    # the horizon = 5 steps that alpha was tuned for.
    loss_scale: float = 5.0
    value_loss_coef: float = 0.25
    clip_norm: float = 40.0            # global-norm gradient clipping; 0 disables
    # Several devices or machines (Stooke & Abbeel 2018, section 4.2: PAAC's update at scale):
    # a common.launch.config.DistributeConfig; None until main.configure() sets the bindings' one.
    distribute: Any = None
    # What common.evaluate plays: a name in common/envs/eval_protocols.py or @EvalProtocol();
    # 'paac': Table 1's 30 games from up to 30 no-op starts, actions drawn from pi.
    eval_protocol: Any = 'paac'

    def evaluation_protocol(self):
        """The run's evaluation protocol, checked for an actor-critic policy on this env."""
        return eval_protocols.require(self.eval_protocol, 'PAACConfig.eval_protocol',
                                      'actor_critic', self.env_config)

    def resolutions(self):
        """RunConfig's, and num_workers 'auto': as many worker processes as this machine has
        cores for that split ne and the sampler's groups (ne unchanged)."""
        changes = super().resolutions()
        if self.num_workers == config_lib.AUTO_WORKERS:
            distribute = changes.get('distribute', self.distribute)
            changes['num_workers'] = config_lib.resolve_num_workers(
                self.owner, self.num_workers, self.num_envs,
                config_lib.sampler_groups(self.sampler, distribute))
        return changes

    def seed_exact_refusal(self):
        return self.overlap_seed_exact_refusal()

    def validate(self):
        """Raises ConfigError naming the first value of the wrong type or out of range."""
        super().validate()
        self.validate_rmsprop()
        require = checks.require
        checks.require_positive_ints(self.owner, self, ('num_envs', 'horizon'))
        self.require_choice('sampler', samplers.SAMPLERS)
        self.evaluation_protocol()
        require(isinstance(self.num_workers, int) and not isinstance(self.num_workers, bool)
                and self.num_workers > 0,
                f'PAACConfig.num_workers must be a positive integer or '
                f'{config_lib.AUTO_WORKERS!r} (set by common.launch.config.resolve), got '
                f'{self.num_workers!r}')
        require(self.num_envs % self.num_workers == 0,
                f'PAACConfig.num_envs={self.num_envs} must be divisible by '
                f'num_workers={self.num_workers}')
        self.require_choice('network', networks.NETWORK_NAMES)
        self.require_choice('initializer', networks.INITIALIZERS)
        require(self.anneal_steps is None or self.anneal_steps > 0,
                f'PAACConfig.anneal_steps must be > 0 or None, got {self.anneal_steps}')
        self.require_non_negative(('final_learning_rate', 'clip_norm', 'entropy_coef',
                                   'value_loss_coef'))
        self.require_positive(('loss_scale',))
        require(self.learning_rate_per_env is None or self.learning_rate_per_env > 0,
                f'PAACConfig.learning_rate_per_env must be > 0 or None, got '
                f'{self.learning_rate_per_env}')
        if self.distribute is not None:
            self.distribute.validate(self.num_envs, self.owner)
        config_lib.require_sampler_groups(self.owner, self.sampler, self.num_workers,
                                          self.distribute)
        self.validate_overlap(self.distribute)
        self.validate_reuse(self.sampler, self.distribute, self.overlap_learning,
                            self.jit_compile)

    def validate_cluster(self, num_machines):
        """Raises ConfigError unless the simulators and worker processes split evenly over a
        multi-worker cluster's workers (each samples its share)."""
        config_lib.require_cluster_split(self.owner, num_machines,
                                         num_workers=self.num_workers, num_envs=self.num_envs)

    @property
    def steps_per_update(self):
        return self.num_envs * self.horizon

    @property
    def initial_learning_rate(self):
        """alpha: learning_rate, or learning_rate_per_env * ne where that is set (section 5.2)."""
        if self.learning_rate_per_env is None:
            return self.learning_rate
        return self.learning_rate_per_env * self.num_envs


def build_learner(config, strategy=None):
    """The actor-critic learner with PAAC's network, RMSProp schedule and loss; under strategy's
    scope if given (its updates then run on every replica)."""
    if strategy is not None:
        with strategy.scope():
            return build_learner(config)
    def make_model():
        return networks.actor_critic_for(config.env_config, config.network, config.initializer,
                                         config.seed, compute_dtype=config.compute_dtype)

    model = make_model()
    optimizer = optim.rmsprop_of(config, optim.EnvStepSchedule(optim.LinearSchedule(
        config.initial_learning_rate, config.final_learning_rate,
        config.anneal_steps or config.total_steps)))
    settings = actor_critic.LossSettings(
        gamma=config.gamma, entropy_coef=config.entropy_coef,
        value_loss_coef=config.value_loss_coef, clip_norm=config.clip_norm,
        scale=config.loss_scale)
    spec = actor_critic.observation_spec(config.env_config)
    return actor_critic.ActorCriticLearner(
        model, optimizer, settings, spec, seed=config.seed, horizon=config.horizon,
        jit_compile=config.jit_compile,
        acting_model=make_model() if config.overlap_learning else None,
        reuse_activations=config.reuse_activations)


def train(config, run_dir, make_pool):
    """Runs PAAC until config.total_steps, resuming from run_dir's checkpoint if there is one;
    on config.distribute's devices or machines (each machine of a cluster samples its share).

    make_pool(env_config, num_envs, seed, num_workers, num_groups) builds the environment pool.
    """
    strategy = distribute.strategy_of(config.distribute)
    machines = multi_worker.MachineShare.of(strategy).num_machines
    kind = pools.configured_kind()
    stepped_by = (f'over {config.num_workers} worker processes' if kind == 'process' else
                  f"in a pool of kind '{kind}'")
    print(f'PAAC: {config.num_envs} environments {stepped_by}, {config.sampler} sampler, '
          f'learning rate {config.initial_learning_rate:g}'
          f"{', the acting pass reused' if config.reuse_activations else ''}", flush=True)
    return on_policy.train(
        config, run_dir, build_learner(config, strategy),
        lambda seed: make_pool(config.env_config, config.num_envs // machines, seed=seed,
                               num_workers=config.num_workers // machines,
                               num_groups=config_lib.sampler_groups(config.sampler,
                                                                    config.distribute)),
        config.sampler, config.horizon, config.num_envs, strategy, config.overlap_learning)
