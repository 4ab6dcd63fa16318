"""GA3C's configuration: every knob, defaults from the original code's Config.py (NVlabs/GA3C);
gin/ga3c/*.gin cite each value. No TensorFlow: agent processes unpickle it."""
import dataclasses
from typing import Any, Optional

import gin

from common.envs import eval_protocols
from common.launch import config as config_lib
from common.learners import networks
from common.system import checks
from ga3c_tf import buckets
from ga3c_tf import dynamic
# Registers AtariConfig and GymConfig with gin, which the presets bind before any env exists.
from common.envs import atari  # noqa: F401
from common.envs import gym as gym_envs  # noqa: F401

ALGORITHMS = ('ga3c', 'a3c_cpu')
TRAINER_INPUTS = ('direct', 'tf_data')
ON_AGENT_DEATH = ('stop', 'replace')
LOSS_REDUCTIONS = ('sum', 'mean')


@gin.configurable
@dataclasses.dataclass
class GA3CConfig(config_lib.RMSPropConfig, config_lib.RunConfig):
    """Every GA3C knob; defaults are the original code's Config.py (gin/ga3c/*.gin cite them)."""
    env_config: Any = None               # @AtariConfig() or @GymConfig()
    algorithm: str = 'ga3c'              # 'ga3c', or 'a3c_cpu': the paper's CPU baseline
    num_agents: int = 32                 # NA (AGENTS)
    num_predictors: int = 2              # NP (PREDICTORS)
    num_trainers: int = 2                # NT (TRAINERS)
    max_agents: int = 128                # upper bounds of the dynamic adjustment
    max_predictors: int = 8
    max_trainers: int = 8
    dynamic_settings: bool = True        # anneal NP/NT/NA (DYNAMIC_SETTINGS)
    dynamic_initial_wait_seconds: float = 10.0
    dynamic_interval_seconds: float = 20.0
    # How the walk moves and judges (dynamic.WALKS): 'every_knob', the original code's (each of
    # NP, NT, NA by -1/0/+1 at once, reverted when TPS fell below the previous interval's);
    # 'one_knob', the paper's words (one of them by +-1, kept if TPS beat the accepted settings').
    dynamic_walk: str = 'every_knob'
    horizon: int = 5                     # TIME_MAX (a sequence of at most horizon steps)
    gamma: float = 0.99                  # DISCOUNT
    prediction_queue_size: int = 100     # MAX_QUEUE_SIZE
    training_queue_size: int = 100       # MAX_QUEUE_SIZE
    prediction_batch_size: int = 128     # PREDICTION_BATCH_SIZE
    training_min_batch_size: int = 0     # TRAINING_MIN_BATCH_SIZE (0: one agent's batch)
    trainer_input: str = 'direct'        # 'direct' or 'tf_data' (measured: README, GA3C)
    pad_batches: str = 'auto'            # prediction and training batches padded to a few
                                         # sizes (ga3c_tf/buckets.py): 'always', 'never', or
                                         # 'auto', where TensorFlow sees a GPU or with
                                         # jit_compile (both compile per input shape)
    network: str = 'nips'
    torso_kwargs: Optional[dict] = None  # e.g. {'first_stride': 2} for 'ga3c_large'
    conv_padding: str = 'same'           # NetworkVP.py's conv2d_layer pads ('SAME')
    initializer: str = 'fan_in_uniform'  # NetworkVP.py: weights and biases U(+-1/sqrt(fan_in))
    input_scale: float = 1 / 128         # x / 128 - 1 as in the original code
    input_offset: float = -1.0
    learning_rate: float = 3e-4          # LEARNING_RATE_START
    final_learning_rate: Optional[float] = None  # LEARNING_RATE_END (None: constant) ...
    anneal_steps: Optional[int] = None   # ... reached linearly after this many env steps
    entropy_coef: float = 0.01           # BETA_START = BETA_END
    value_loss_coef: float = 0.5         # cost_v = 0.5 * sum((R - V)^2)
    log_epsilon: float = 1e-6            # LOG_EPSILON, eq. (5)
    loss_reduction: str = 'sum'          # the original sums over the batch; 'mean' averages
    clip_norm: float = 0.0               # USE_GRAD_CLIP=False; 40 when on
    total_steps: int = 50_000_000
    on_agent_death: str = 'stop'         # 'stop' ends the run; 'replace' starts a new agent
    # What common.evaluate plays: a name in common/envs/eval_protocols.py or @EvalProtocol();
    # 'ga3c': Table 3's 30 games, from reset (no no-op starts), argmax pi as the code's PLAY_MODE.
    eval_protocol: Any = 'ga3c'
    a3c_onednn: bool = False             # A3C-CPU agents' TF kernels: stock (faster at batch 1)

    def seed_exact_refusal(self):
        return ("GA3C's agent processes and predictor and trainer threads (and A3C-CPU's agents) "
                'run at their own pace: what each batch holds depends on timing')

    def evaluation_protocol(self):
        """The run's evaluation protocol, checked for an actor-critic policy on this env."""
        return eval_protocols.require(self.eval_protocol, 'GA3CConfig.eval_protocol',
                                      'actor_critic', self.env_config)

    def validate(self):
        """Raises ConfigError naming the first value of the wrong type or out of range."""
        super().validate()
        self.validate_rmsprop()
        self.evaluation_protocol()
        require = checks.require
        for name, allowed in (('algorithm', ALGORITHMS), ('trainer_input', TRAINER_INPUTS),
                              ('pad_batches', buckets.PAD_BATCHES),
                              ('on_agent_death', ON_AGENT_DEATH),
                              ('loss_reduction', LOSS_REDUCTIONS),
                              ('network', networks.NETWORK_NAMES),
                              ('conv_padding', networks.PADDINGS),
                              ('initializer', networks.INITIALIZERS)):
            self.require_choice(name, allowed)
        checks.require_positive_ints(self.owner, self, (
            'num_agents', 'num_predictors', 'num_trainers', 'max_agents', 'max_predictors',
            'max_trainers', 'horizon', 'prediction_queue_size', 'training_queue_size',
            'prediction_batch_size'))
        for name in ('agents', 'predictors', 'trainers'):
            value, bound = getattr(self, f'num_{name}'), getattr(self, f'max_{name}')
            require(value <= bound, f'GA3CConfig.num_{name}={value} exceeds '
                                    f'max_{name}={bound}')
        require(self.max_agents < 1 << 16,
                f'GA3CConfig.max_agents={self.max_agents} must be < 65536')
        if self.network == 'ga3c_large':
            stride = (self.torso_kwargs or {}).get('first_stride', 4)
            require(stride in (1, 2, 3, 4),
                    f'GA3CConfig.torso_kwargs first_stride={stride!r}; allowed: 1, 2, 3, 4')
        self.require_positive(('dynamic_interval_seconds',))
        self.require_choice('dynamic_walk', dynamic.WALKS)
        self.require_non_negative(('training_min_batch_size', 'entropy_coef', 'value_loss_coef',
                                   'log_epsilon', 'clip_norm', 'dynamic_initial_wait_seconds'))
        require(self.final_learning_rate is None or self.final_learning_rate >= 0,
                f'GA3CConfig.final_learning_rate must be >= 0 or None, '
                f'got {self.final_learning_rate!r}')
        require(self.anneal_steps is None or self.anneal_steps > 0,
                f'GA3CConfig.anneal_steps must be a positive integer or None, '
                f'got {self.anneal_steps!r}')

    def model_kwargs(self):
        """Arguments of networks.make_actor_critic, explicit so that other processes can rebuild
        the model without the gin config."""
        env_config = self.env_config
        torso_kwargs = dict(self.torso_kwargs or {})
        if self.network in networks.PADDABLE_NETWORKS:
            torso_kwargs.setdefault('padding', self.conv_padding)
        return dict(num_actions=env_config.num_actions(),
                    observation_shape=tuple(env_config.observation_shape),
                    observation_dtype=env_config.observation_dtype, network=self.network,
                    input_scale=self.input_scale, input_offset=self.input_offset,
                    torso_kwargs=torso_kwargs, initializer=self.initializer, seed=self.seed,
                    compute_dtype=self.compute_dtype)

    def learning_rate_schedule(self):
        """Env steps -> learning rate: linear from learning_rate to final_learning_rate."""
        from common.learners import optim  # pylint: disable=import-outside-toplevel  (TensorFlow)
        final = self.learning_rate if self.final_learning_rate is None else \
            self.final_learning_rate
        return optim.LinearSchedule(self.learning_rate, final,
                                    self.anneal_steps or self.total_steps)
