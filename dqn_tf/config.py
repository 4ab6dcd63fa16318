"""Fast DQN's configuration: every knob, defaults from the paper (Table 5, section 5, Appendix B);
gin/dqn/*.gin cite each value."""
import dataclasses
from typing import Any, Optional

import gin

from common.envs import eval_protocols
from common.launch import config as config_lib
from common.learners import networks
from common.learners import optim
from common.system import checks
from common.system import machine_load
# Registers AtariConfig and GymConfig with gin, which the presets bind before any env exists.
from common.envs import ale_vector
from common.envs import atari  # noqa: F401
from common.envs import gym as gym_envs  # noqa: F401

# The four execution modes of section 5.1: (concurrent, synchronized) -> name.
MODES = {(False, False): 'standard', (True, False): 'concurrent',
         (False, True): 'synchronized', (True, True): 'both'}
MODE_SWITCHES = {name: switches for switches, name in MODES.items()}
ACTOR_ENVS = ('thread', 'process', 'vector')  # where the actors' environments step


@gin.configurable
@dataclasses.dataclass
class DQNConfig(config_lib.RunConfig):
    """Every fast-DQN knob; defaults are the paper's (Table 5, sec. 5); gin/dqn/*.gin cites them."""
    env_config: Any = None             # @AtariConfig() or @GymConfig()
    num_actors: int = 8                # W actor threads (the paper's "sampler threads")
    # Where each actor thread's environment steps: 'thread', in the thread itself (ale_py holds
    # the GIL while it emulates, so the W threads emulate one at a time); 'process', in a worker
    # process of its own that the thread waits on with the GIL released, so the W emulate side by
    # side, as the authors' threads did through atari-py's ctypes calls (which release the GIL).
    # Same environments, seeds and transitions either way. 'vector' (Atari only): one thread
    # steps all W in ale_py's vector env, whose C++ threads emulate them side by side, one call
    # a round; same frames, other no-op starts and a FIRE reset's first frame taken before the
    # press (docs/papers/fast_dqn.md).
    actor_envs: str = 'thread'
    concurrent: bool = True            # act with the target network, train on a thread
    synchronized: bool = True          # one batched inference for the W actors' states
    total_steps: int = 50_000_000      # training timesteps (x4 frames), after prepopulation
    batch_size: int = 32
    replay_capacity: int = 1_000_000
    prefault_replay: bool = True       # take the replay's memory at start (ReplayMemory)
    # Not in the paper (one process, one session): at a clean end of a session (total_steps,
    # Ctrl-C or SIGTERM) the replay is saved to run_dir/replay beside the final checkpoint, and
    # a resumed run continues from it instead of prepopulating again (common/replay/
    # replay_files.py). ~7 GB on disk for 1M Pong frames; False: refill on resume.
    save_replay: bool = True
    target_period: int = 10_000        # C
    train_period: int = 4              # F
    gamma: float = 0.99
    prepopulate_steps: int = 50_000    # N uniformly random steps before training
    network: str = 'nature'
    torso_kwargs: Optional[dict] = None  # e.g. {'hidden_sizes': (64, 64)} for 'mlp'
    dueling: bool = False              # Wang et al. (2016) streams (not in the paper)
    double_dqn: bool = False
    learning_rate: float = 2.5e-4
    rmsprop_decay: float = 0.95
    rmsprop_epsilon: float = 0.01
    # Where epsilon goes: False, sqrt(ms - mg^2) + epsilon, as the authors' code ran it
    # (tf.keras RMSprop with momentum 0); True, sqrt(ms - mg^2 + epsilon) as Mnih et al.'s.
    rmsprop_epsilon_inside_sqrt: bool = False
    huber_delta: float = 1.0
    initial_epsilon: float = 1.0
    final_epsilon: float = 0.1
    epsilon_decay_steps: int = 1_000_000
    eval_every_steps: int = 250_000    # 0 disables evaluation
    # What an evaluation plays (in-run and common.evaluate): a name in
    # common/envs/eval_protocols.py, or @EvalProtocol(); 'fast_dqn': 30 episodes at epsilon 0.05
    # (section 5.2), capped at 108,000 frames as the authors' code does.
    eval_protocol: Any = 'fast_dqn'
    # TF intra-op threads of the learner (0: TF's default, every core). None: the CPUs less one,
    # at least 1: the actors share one GIL, so they keep about one core busy, and a learner
    # spread over that core too makes both slower (measured: README, Fast DQN).
    tf_intra_op_threads: Optional[int] = None
    # Concurrent trainer: minibatches per tf.function call (a graph loop over a stack of them).
    # Replay is frozen during a period, so this changes no update, only the calls: 1 is one call
    # per minibatch. Measured: README, Fast DQN.
    minibatches_per_call: int = 8
    # Concurrent modes: how much nicer (0-19, Linux) than the learner the actor threads run,
    # so the learner's threads get the cores first and acting fills what they leave idle. 0: one
    # priority for all. Measured: README, Fast DQN.
    acting_nice: int = 19

    def intra_op_threads(self):
        """What tf_intra_op_threads resolves to on this machine."""
        if self.tf_intra_op_threads is None:
            return max(1, machine_load.usable_cores() - 1)
        return self.tf_intra_op_threads

    @property
    def mode(self):
        return MODES[(bool(self.concurrent), bool(self.synchronized))]

    def seed_exact_refusal(self):
        if self.concurrent:
            return ('concurrent=True trains on a thread while the actors act (section 5.1); '
                    "DQNConfig.concurrent = False runs the 'synchronized' or 'standard' mode")
        return None

    def validate(self):
        """Raises ConfigError naming the first value of the wrong type or out of range."""
        super().validate()
        require = checks.require
        checks.require_positive_ints(self.owner, self, (
            'num_actors', 'batch_size', 'replay_capacity', 'target_period', 'train_period',
            'prepopulate_steps', 'epsilon_decay_steps', 'minibatches_per_call'))
        self.require_non_negative(('eval_every_steps',))
        require(self.target_period % self.num_actors == 0,
                f'DQNConfig.target_period={self.target_period} (C) must be divisible by '
                f'num_actors={self.num_actors} (W)')
        require(self.target_period % self.train_period == 0,
                f'DQNConfig.target_period={self.target_period} (C) must be divisible by '
                f'train_period={self.train_period} (F)')
        require(self.total_steps % self.num_actors == 0,
                f'DQNConfig.total_steps={self.total_steps} must be divisible by '
                f'num_actors={self.num_actors}')
        require(self.replay_capacity >= self.target_period,
                f'DQNConfig.replay_capacity={self.replay_capacity} must be >= '
                f'target_period={self.target_period} (a period is staged before replay)')
        require(self.prepopulate_steps >= self.batch_size,
                f'DQNConfig.prepopulate_steps={self.prepopulate_steps} must be >= '
                f'batch_size={self.batch_size}')
        self.require_choice('network', networks.NETWORK_NAMES)
        self.require_choice('actor_envs', ACTOR_ENVS)
        if self.actor_envs == 'vector':
            try:
                ale_vector.AleVectorPool.validate(self.env_config, self.num_actors, self.seed)
            except ValueError as error:
                require(False, f"DQNConfig.actor_envs='vector' cannot run this env_config: "
                        f'{error}')
        self.require_positive(('learning_rate', 'rmsprop_epsilon', 'huber_delta'))
        require(self.tf_intra_op_threads is None or self.tf_intra_op_threads >= 0,
                f'DQNConfig.tf_intra_op_threads must be None or an int >= 0, '
                f'got {self.tf_intra_op_threads!r}')
        require(0 < self.rmsprop_decay < 1,
                f'DQNConfig.rmsprop_decay must be in (0, 1), got {self.rmsprop_decay}')
        require(0 <= self.acting_nice <= 19,
                f'DQNConfig.acting_nice must be an int in [0, 19], got {self.acting_nice!r}')
        checks.require_fractions(self.owner, self, ('initial_epsilon', 'final_epsilon'))
        self.evaluation_protocol()

    def evaluation_protocol(self):
        """The run's evaluation protocol (eval_protocols.EvalProtocol), checked for a Q-value
        policy on this env."""
        return eval_protocols.require(self.eval_protocol, 'DQNConfig.eval_protocol', 'q_values',
                                      self.env_config)

    @property
    def stack(self):
        return getattr(self.env_config, 'stack', 1)

    def epsilon_schedule(self):
        """Exploration rate by training step: linear from initial to final, then flat."""
        return optim.LinearSchedule(self.initial_epsilon, self.final_epsilon,
                                    self.epsilon_decay_steps)

    def epsilon(self, step):
        return self.epsilon_schedule().value_at(step)


# Bindings that fast DQN's config owns, or that its centered RMSProp fixes.
_FIXED = ("fast DQN always runs the paper's centered RMSProp (mean squares from zeros); bind "
          'DQNConfig.rmsprop_epsilon_inside_sqrt for where epsilon goes')
RENAMED = {'RMSProp.learning_rate': 'bind DQNConfig.learning_rate instead',
           'RMSProp.decay': 'bind DQNConfig.rmsprop_decay instead',
           'RMSProp.epsilon': 'bind DQNConfig.rmsprop_epsilon instead',
           'RMSProp.epsilon_inside_sqrt': 'bind DQNConfig.rmsprop_epsilon_inside_sqrt instead',
           'RMSProp.centered': _FIXED,
           'RMSProp.initial_mean_square': _FIXED}
# Names changed so that each means one thing across the tree (docs/code_map.md, Words): W is the
# paper's "sampler threads", actors here (a sampler fills a rollout, num_workers counts
# environment processes), and the TF thread count is not a learner. An old name is read as its
# new one with a one-line notice (app.parse_gin).
MOVED = {'DQNConfig.num_workers': 'DQNConfig.num_actors',
         'DQNConfig.num_samplers': 'DQNConfig.num_actors',
         'DQNConfig.sampler_envs': 'DQNConfig.actor_envs',
         'DQNConfig.learner_threads': 'DQNConfig.tf_intra_op_threads'}
# The evaluation's episodes, epsilon, no-op starts and cap: one named protocol now.
_PROTOCOL = ('bind DQNConfig.eval_protocol instead: a protocol name (common/envs/'
             "eval_protocols.py: 'fast_dqn' is 30 episodes at epsilon 0.05, 30 no-op starts, "
             "108,000 frames), or @EvalProtocol() with EvalProtocol.base and the values to change")
RENAMED.update({name: _PROTOCOL for name in (
    'DQNConfig.eval_episodes', 'DQNConfig.eval_epsilon', 'evaluation_env_config.noop_max',
    'evaluation_env_config.max_episode_steps')})
