"""Every knob of the accelerated methods' policy-gradient family (Stooke & Abbeel 2018); the
defaults are A2C's, gin/accel/*.gin set each algorithm's values and cite them."""
import dataclasses
import math
from typing import Any, Optional

import gin

from accel_tf import q_config
from common import app
from common import config as config_lib
from common import networks
from common import samplers
# Registers AtariConfig and GymConfig with gin, which the presets bind before any env exists.
from common.envs import atari  # noqa: F401
from common.envs import gym as gym_envs  # noqa: F401

ALGORITHMS = ('a2c', 'ppo', 'a3c', 'appo', 'dqn', 'cat_dqn', 'rainbow')
# The Q-value family (section 5.2-5.3): off-policy, on replay, with AccelConfig.q_values.
Q_ALGORITHMS = ('dqn', 'cat_dqn', 'rainbow')
# Asynchronous: learner processes, each a sampler-learner unit on the central store (section 5.1).
ASYNC_ALGORITHMS = ('a3c', 'appo')
# The update rule each asynchronous algorithm applies to the central store.
ASYNC_OPTIMIZERS = {'a3c': 'rmsprop', 'appo': 'adam'}
# Synchronous on several devices (DistributeConfig 'mirrored', section 4.2) and on several
# machines ('multi_worker') so far.
MIRRORED_ALGORITHMS = ('a2c', 'ppo') + Q_ALGORITHMS
MULTI_WORKER_ALGORITHMS = ('a2c', 'ppo') + Q_ALGORITHMS
OPTIMIZERS = ('rmsprop', 'adam')
LEARNING_RATE_SCALINGS = ('sqrt', 'none')


@gin.configurable
@dataclasses.dataclass
class AccelConfig(config_lib.RMSPropConfig, config_lib.RunConfig):
    """One run of A2C, PPO, A3C or APPO on the synchronized or alternating sampler (section
    4.1); for A3C and APPO, every field but the asynchronous ones describes one learner unit."""
    env_config: Any = None              # @AtariConfig() or @GymConfig()
    algorithm: str = 'a2c'              # 'a2c' | 'ppo' | 'a3c' | 'appo'
    total_steps: int = 10_000_000       # environment steps (x frame skip frames)
    # Sampling (section 4.1): num_workers processes step envs_per_worker simulators each.
    sampler: str = 'synchronized'       # 'synchronized' | 'alternating' (two worker groups)
    num_workers: int = 2                # n worker processes
    envs_per_worker: int = 8            # m simulators stepped in sequence by each worker
    pin_cpus: bool = False              # pin worker i to CPU i (mod the CPUs usable)
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
    anneal_learning_rate: bool = False  # linearly to 0 over total_steps
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-5
    entropy_coef: float = 0.01
    value_loss_coef: float = 0.5        # times mean (R - V)^2
    clip_norm: float = 0.5              # global-norm gradient clipping; 0 disables
    gae_lambda: Optional[float] = None  # None: n-step returns (A2C); a float: GAE
    # PPO (Schulman et al. 2017): epochs over the batch in minibatches, clipped ratio.
    epochs: int = 4
    minibatches: int = 4
    ratio_clip: float = 0.1
    anneal_ratio_clip: bool = False     # ratio_clip x the same linear decay as the rate
    normalize_advantages: bool = False  # per minibatch, to mean 0 and standard deviation 1
    # Asynchronous (A3C, APPO; section 5.1): learner processes on one central parameter store.
    num_learners: int = 2               # sampler-learner units, each with its own workers
    num_chunks: int = 3                 # store chunks, a lock each (section 5.1, footnote 2)
    local_steps_per_sync: int = 1       # APPO: local Adam steps per synchronization (App. B)
    pull_every_steps: int = 64          # APPO: sampling steps between pulls (section 4.2)
    # A learner process that dies: 'stop' the run (a checkpoint, one line) or 'continue' with
    # the others (the store frees its locks and rolls back its half-written chunk).
    on_learner_death: str = 'stop'
    # The Q-value family: @QValueConfig() (replay, training intensity, variants).
    q_values: Any = None
    # Several devices (section 4.2): a common.config.DistributeConfig; None until configure()
    # sets the one DistributeConfig's bindings make.
    distribute: Any = None

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

    def validate(self):
        """Raises ConfigError naming the first value of the wrong type or out of range."""
        super().validate()
        self.validate_rmsprop()
        require = app.require
        self.require_choice('algorithm', ALGORITHMS)
        self.require_choice('sampler', samplers.SAMPLERS)
        app.require_positive_ints(self.owner, self, (
            'num_workers', 'envs_per_worker', 'horizon', 'learning_rate_base_envs', 'epochs',
            'minibatches'))
        self.require_choice('network', networks.NETWORK_NAMES)
        self.require_choice('initializer', networks.INITIALIZERS)
        self.require_choice('optimizer', OPTIMIZERS)
        self.require_choice('learning_rate_scaling', LEARNING_RATE_SCALINGS)
        require(0 <= self.adam_beta1 < 1 and 0 <= self.adam_beta2 < 1,
                f'AccelConfig.adam_beta1 and adam_beta2 must be in [0, 1), got '
                f'{self.adam_beta1} and {self.adam_beta2}')
        self.require_positive(('adam_epsilon',))
        self.require_non_negative(('entropy_coef', 'value_loss_coef', 'clip_norm'))
        require(self.gae_lambda is None or 0 <= self.gae_lambda <= 1,
                f'AccelConfig.gae_lambda must be None or in [0, 1], got {self.gae_lambda!r}')
        require(0 < self.ratio_clip < 1,
                f'AccelConfig.ratio_clip must be in (0, 1), got {self.ratio_clip!r}')
        app.require_positive_ints(self.owner, self, (
            'num_learners', 'num_chunks', 'local_steps_per_sync', 'pull_every_steps'))
        if self.algorithm in ASYNC_ALGORITHMS:
            self._validate_async()
        if self.algorithm in Q_ALGORITHMS:
            self._validate_q_values()
        if self.distribute is not None:
            self._validate_distribute()
        config_lib.require_sampler_groups(self.owner, self.sampler, self.num_workers,
                                          self.distribute)
        if self.algorithm in ('ppo', 'appo'):
            require(self.gae_lambda is not None,
                    f"AccelConfig.algorithm={self.algorithm!r} needs gae_lambda (a float in "
                    "[0, 1])")
            require(self.steps_per_update % self.minibatches == 0,
                    f'AccelConfig.minibatches={self.minibatches} must divide the batch, '
                    f'num_envs * horizon = {self.steps_per_update}')

    def _validate_distribute(self):
        distribute = self.distribute
        distribute.validate(self.num_envs, 'AccelConfig')
        if distribute.strategy == 'none':
            return
        built_for = (MULTI_WORKER_ALGORITHMS if distribute.strategy == 'multi_worker' else
                     MIRRORED_ALGORITHMS)
        app.require(self.algorithm in built_for,
                    f"DistributeConfig.strategy={distribute.strategy!r} is built for algorithm "
                    f"{', '.join(built_for)}, not {self.algorithm!r}")
        if self.algorithm == 'ppo':
            minibatch = self.steps_per_update // self.minibatches
            app.require(minibatch % distribute.num_replicas == 0,
                        f'AccelConfig: PPO minibatches of {minibatch} do not split evenly over '
                        f'DistributeConfig.num_replicas={distribute.num_replicas}')
        if self.algorithm in Q_ALGORITHMS and isinstance(self.q_values, q_config.QValueConfig):
            app.require(distribute.strategy != 'multi_worker' or not self.q_values.asynchronous,
                        "QValueConfig.asynchronous=True is not built for DistributeConfig."
                        "strategy='multi_worker'; bind QValueConfig.asynchronous = False")
            batch_size = self.q_values.batch_size
            app.require(batch_size % distribute.num_replicas == 0,
                        f'QValueConfig.batch_size={batch_size} does not split evenly over '
                        f'DistributeConfig.num_replicas={distribute.num_replicas}')

    def validate_cluster(self, num_cluster_workers):
        """Raises ConfigError unless the run's simulators and environment processes split
        evenly over a multi-worker cluster's workers (each runs its share with its own sampler)
        and PPO's minibatches, or the Q-value family's replay minibatches, over their local
        batches."""
        config_lib.require_cluster_split(self.owner, num_cluster_workers,
                                         num_workers=self.num_workers, num_envs=self.num_envs)
        if self.algorithm in Q_ALGORITHMS:
            config_lib.require_cluster_split('QValueConfig', num_cluster_workers,
                                             batch_size=self.q_values.batch_size)
        if self.algorithm == 'ppo':
            local_batch = self.steps_per_update // num_cluster_workers
            app.require(local_batch % self.minibatches == 0,
                        f'AccelConfig.minibatches={self.minibatches} must divide each of the '
                        f'{num_cluster_workers} workers\' batch of {local_batch}')

    def _validate_async(self):
        algorithm = self.algorithm
        self.require_choice('on_learner_death', config_lib.ON_LEARNER_DEATH)
        optimizer = ASYNC_OPTIMIZERS[algorithm]
        app.require(self.optimizer == optimizer,
                    f"AccelConfig.optimizer={self.optimizer!r}; algorithm={algorithm!r} "
                    f"updates the central store with {optimizer!r} only")
        for name in ('anneal_learning_rate', 'anneal_ratio_clip'):
            app.require(not getattr(self, name),
                        f'AccelConfig.{name}=True; not available for algorithm={algorithm!r} '
                        '(no schedule, Appendix A.3)')
        if algorithm == 'appo':
            steps = self.epochs * self.minibatches
            app.require(steps % self.local_steps_per_sync == 0,
                        f'AccelConfig.local_steps_per_sync={self.local_steps_per_sync} must '
                        f'divide the gradient steps per batch, epochs * minibatches = {steps}')

    def _validate_q_values(self):
        q_values = self.q_values
        app.require(isinstance(q_values, q_config.QValueConfig),
                    f'AccelConfig.algorithm={self.algorithm!r} needs AccelConfig.q_values = '
                    f'@QValueConfig(), got {q_values!r}')
        q_values.validate(self.algorithm)
        stack = getattr(self.env_config, 'stack', 1)
        per_stream = q_values.replay_capacity // self.num_envs
        app.require(per_stream >= stack + q_values.n_step,
                    f'QValueConfig.replay_capacity={q_values.replay_capacity} gives '
                    f'{per_stream} steps per simulator for {self.num_envs} simulators; need '
                    f'at least stack + n_step = {stack + q_values.n_step}')
