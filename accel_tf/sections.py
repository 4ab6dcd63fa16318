"""The config sections of the accelerated methods that only some algorithms read (their rows in
accel_tf/algorithms.py name them): the actor-critic loss, PPO's optimization phase, the
asynchronous learner processes and APPO's actor-learner. The Q-value family's is QValueConfig
(accel_tf/q_config.py). AccelConfig holds what every algorithm reads; gin/accel/*.gin set and
cite the values.

Each section checks its own values against the run (validate), the devices it is split over
(validate_distribute) and a multi-worker cluster's share (validate_cluster); each raises
errors.ConfigError naming the first value out of range.
"""
import dataclasses
from typing import Any, Optional

import gin

from common.envs import eval_protocols
from common.system import checks
from common.system import devices
from common.system import processes


class Section:
    """What every section has: FIELD, the AccelConfig field holding it, and its checks (none by
    default)."""
    FIELD = None

    @property
    def owner(self):
        return type(self).__name__

    def validate(self, config):
        """config: the AccelConfig holding this section, its own fields already checked."""
        checks.require_field_types(self.owner, self)

    def validate_distribute(self, config, distribute):
        """distribute: config's DistributeConfig, strategy other than 'none', validated."""
        del config, distribute

    def validate_cluster(self, config, num_machines):
        del config, num_machines

    def require_non_negative(self, names):
        for name in names:
            value = getattr(self, name)
            checks.require(value >= 0, f'{self.owner}.{name} must be >= 0, got {value!r}')


@gin.configurable
@dataclasses.dataclass
class ActorCriticConfig(Section):
    """The actor-critic loss of A2C, PPO, A3C and APPO: entropy - value - policy terms and the
    gradient's clipping (the Q-value family's loss and clipping are QValueConfig's)."""
    FIELD = 'actor_critic'
    entropy_coef: float = 0.01
    value_loss_coef: float = 0.5        # times mean (R - V)^2
    clip_norm: float = 0.5              # global-norm gradient clipping; 0 disables
    gae_lambda: Optional[float] = None  # None: n-step returns (A2C); a float: GAE
    # What common.evaluate plays (no in-run evaluation: section 4.2 tracks online scores): a name
    # in common/envs/eval_protocols.py or @EvalProtocol(); 'stooke_pg': 100 whole games, actions
    # drawn from pi, as the online scores of the most recent 100 trajectories (section 4.2).
    eval_protocol: Any = 'stooke_pg'

    def validate(self, config):
        super().validate(config)
        self.require_non_negative(('entropy_coef', 'value_loss_coef', 'clip_norm'))
        self.evaluation_protocol(config.env_config)
        checks.require(self.gae_lambda is None or 0 <= self.gae_lambda <= 1,
                       f'ActorCriticConfig.gae_lambda must be None or in [0, 1], got '
                       f'{self.gae_lambda!r}')
        row = config.row
        checks.require(self.gae_lambda is not None or not row.needs_gae,
                       f'ActorCriticConfig.gae_lambda=None; algorithm={row.name!r} needs '
                       'gae_lambda (a float in [0, 1])')

    def evaluation_protocol(self, env_config):
        """The run's evaluation protocol, checked for an actor-critic policy on env_config."""
        return eval_protocols.require(self.eval_protocol, 'ActorCriticConfig.eval_protocol',
                                      'actor_critic', env_config)


# Where PPOConfig.kl_target keeps the learning rate (rl_games' AdaptiveScheduler bounds).
KL_ADAPTIVE_RANGE = (1e-6, 1e-2)
# The PPOConfig options that keep running moments in the learner.
MOMENTS_OPTIONS = ('normalize_values', 'normalize_observations')


@gin.configurable
@dataclasses.dataclass
class PPOConfig(Section):
    """PPO's optimization phase (Schulman et al. 2017): epochs over the batch in minibatches,
    the clipped ratio; PPO and APPO."""
    FIELD = 'ppo'
    epochs: int = 4
    minibatches: int = 4
    ratio_clip: float = 0.1
    anneal_ratio_clip: bool = False     # ratio_clip x the same linear decay as the rate
    normalize_advantages: bool = False  # per minibatch, to mean 0 and standard deviation 1
    # Above 0: the learning rate adapts after every minibatch to keep PPO's approx_kl_k2 near this
    # (rl_games' 'adaptive' lr_schedule, rl_games/common/schedulers.py; not Stooke & Abbeel's).
    kl_target: float = 0.0
    # The value head predicts returns standardized by their running mean and variance (rl_games'
    # normalize_value, rl_games/algos_torch/running_mean_std.py; not Stooke & Abbeel's).
    normalize_values: bool = False
    # Each observation element standardized by running moments that every training minibatch
    # updates (rl_games' normalize_input; not Stooke & Abbeel's).
    normalize_observations: bool = False

    @property
    def gradient_steps(self):
        """Gradient steps in one optimization phase."""
        return self.epochs * self.minibatches

    def validate(self, config):
        super().validate(config)
        checks.require_positive_ints(self.owner, self, ('epochs', 'minibatches'))
        checks.require(0 < self.ratio_clip < 1,
                       f'PPOConfig.ratio_clip must be in (0, 1), got {self.ratio_clip!r}')
        row = config.row
        checks.require(row.schedules or not self.anneal_ratio_clip,
                       f'PPOConfig.anneal_ratio_clip=True; not available for algorithm='
                       f'{row.name!r} (no schedule, Appendix A.3)')
        checks.require(self.kl_target >= 0,
                       f'PPOConfig.kl_target must be >= 0 (0: no adaptation), got '
                       f'{self.kl_target!r}')
        for name in MOMENTS_OPTIONS:
            checks.require(row.loop == 'on_policy' or not getattr(self, name),
                           f'PPOConfig.{name}=True; available for ppo, not algorithm='
                           f'{row.name!r} (its learners would each keep their own moments)')
        if self.kl_target > 0:
            checks.require(row.loop == 'on_policy',
                           f'PPOConfig.kl_target={self.kl_target!r}; available for ppo, not '
                           f'algorithm={row.name!r} (its steps apply on the parameter store)')
            checks.require(not config.anneal_learning_rate,
                           f'PPOConfig.kl_target={self.kl_target!r} sets the learning rate; '
                           'AccelConfig.anneal_learning_rate must then be False')
            rate = config.scaled_learning_rate
            checks.require(KL_ADAPTIVE_RANGE[0] <= rate <= KL_ADAPTIVE_RANGE[1],
                           f'PPOConfig.kl_target adapts the learning rate within '
                           f'{KL_ADAPTIVE_RANGE}; the scaled AccelConfig.learning_rate {rate!r} '
                           'is outside it')
        checks.require(config.steps_per_update % self.minibatches == 0,
                       f'PPOConfig.minibatches={self.minibatches} must divide the batch, '
                       f'num_envs * horizon = {config.steps_per_update}')

    def validate_distribute(self, config, distribute):
        for name in MOMENTS_OPTIONS:
            checks.require(not getattr(self, name),
                           f'PPOConfig.{name}=True is built for DistributeConfig.strategy='
                           f"'none' only, not {distribute.strategy!r} (one set of running moments)")
        minibatch = config.steps_per_update // self.minibatches
        checks.require(minibatch % distribute.num_replicas == 0,
                       f'PPOConfig: PPO minibatches of {minibatch} do not split evenly over '
                       f'DistributeConfig.num_replicas={distribute.num_replicas}')

    def validate_cluster(self, config, num_machines):
        local_batch = config.steps_per_update // num_machines
        checks.require(local_batch % self.minibatches == 0,
                       f'PPOConfig.minibatches={self.minibatches} must divide each of the '
                       f'{num_machines} machines\' batch of {local_batch}')


@gin.configurable
@dataclasses.dataclass
class AsyncLearnersConfig(Section):
    """A3C's and APPO's learner processes on one central parameter store (section 5.1); their
    number is AccelConfig.num_actor_learners."""
    FIELD = 'async_learners'
    num_chunks: int = 3                 # store chunks, a lock each (section 5.1, footnote 2)
    # A learner process that dies: 'stop' the run (a checkpoint, one line) or 'continue' with
    # the others (the store frees its locks and rolls back its half-written chunk).
    on_learner_death: str = 'stop'
    # Each learner's GPU memory (MB) where there are fewer GPUs than learners and several share
    # one (common/system/devices.py, learner_gpus); a learner alone on its GPU has no limit.
    shared_gpu_memory_mb: int = devices.SHARED_GPU_MEMORY_MB

    def validate(self, config):
        super().validate(config)
        checks.require_positive_ints(self.owner, self, ('num_chunks', 'shared_gpu_memory_mb'))
        checks.require(self.on_learner_death in processes.ON_LEARNER_DEATH,
                       f'AsyncLearnersConfig.on_learner_death={self.on_learner_death!r}; allowed: '
                       f'{processes.ON_LEARNER_DEATH}')


@gin.configurable
@dataclasses.dataclass
class APPOConfig(Section):
    """APPO's actor-learner (section 4.2, Appendix B): local Adam steps between synchronizations
    with the store, sampling steps between pulls of the central parameters."""
    FIELD = 'appo'
    local_steps_per_sync: int = 1       # local Adam steps per synchronization (App. B)
    pull_every_steps: int = 64          # sampling steps between pulls (section 4.2)

    def validate(self, config):
        super().validate(config)
        checks.require_positive_ints(self.owner, self, ('local_steps_per_sync', 'pull_every_steps'))
        steps = config.ppo.gradient_steps
        checks.require(steps % self.local_steps_per_sync == 0,
                       f'APPOConfig.local_steps_per_sync={self.local_steps_per_sync} must divide '
                       f'the gradient steps per batch, epochs * minibatches = {steps}')
        checks.require(config.sampler == 'synchronized',
                       f"AccelConfig.sampler={config.sampler!r} is not built for APPO (its "
                       f"actor-learner records every environment's log-probability at each "
                       f"step); allowed: 'synchronized'")
