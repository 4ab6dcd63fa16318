"""The Q-value family's knobs (Stooke & Abbeel 2018, sections 2 and 5, Appendix A.3): replay,
training intensity, targets, exploration, and the DQN variants Rainbow combines: the config
section of the algorithms whose row reads QValueConfig (accel_tf/algorithms.py), held as
AccelConfig.q_values; gin/accel/*_pong.gin set and cite the values."""
import dataclasses
from typing import Any

import gin

from accel_tf import sections
from common.envs import eval_protocols
from common.launch import config as config_lib
from common.learners import losses
from common.replay import replay_feed
from common.system import checks


# The evaluation's fields, one named protocol now (QValueConfig.eval_protocol): old binding ->
# what to bind instead; accel_tf/main.py refuses them in presets and reads recorded runs without.
RENAMED = {f'QValueConfig.{name}': (
    "bind QValueConfig.eval_protocol instead: a protocol name (common/envs/eval_protocols.py: "
    "'stooke' is 125,000 steps over 4 environments, each episode cut at 108,000 frames, epsilon "
    '0.001), or @EvalProtocol() with EvalProtocol.base and the values to change')
    for name in ('eval_max_steps', 'eval_max_path_steps', 'eval_envs', 'eval_epsilon')}


@gin.configurable
@dataclasses.dataclass
class QValueConfig(sections.Section):
    """Defaults are Nature DQN's (Mnih et al. 2015) where the paper keeps "the original
    publication's" values; the presets cite each."""
    FIELD = 'q_values'
    batch_size: int = 32
    # Training intensity (section 4.2: 8 for DQN and its variants): updates_per_phase x
    # batch_size transitions trained per num_envs x horizon sampled.
    updates_per_phase: int = 1
    replay_capacity: int = 1_000_000   # split over the simulators' streams (section 5.2)
    # Not in the paper (one session): at a clean end of a session (total_steps, Ctrl-C or
    # SIGTERM) replay is saved to run_dir/replay beside the final checkpoint and a resumed run
    # continues from it instead of refilling (common/replay/replay_files.py); one machine only.
    # ~8.3 GB on disk for 1M Pong frames of 104x80; False: refill on resume.
    save_replay: bool = True
    min_replay_steps: int = 50_000     # stored before the first update
    target_period: int = 40_000        # environment steps between target copies
    n_step: int = 1
    double_dqn: bool = False
    dueling: bool = False
    huber_delta: float = 1.0           # DQN's loss; the categorical loss has none
    clip_norm: float = 0.0             # global-norm gradient clipping; 0 (Nature DQN) disables
    num_atoms: int = 1                 # > 1: categorical DQN over [v_min, v_max]
    v_min: float = -10.0
    v_max: float = 10.0
    prioritized: bool = False          # proportional prioritized replay (Schaul et al. 2016)
    priority_alpha: float = 0.6
    # A categorical step's priority: 'kl' (Hessel et al. 2018, section 3; accel_rl cat_dqn.py)
    # or 'cross_entropy' (Dopamine's Rainbow); common/learners/losses.py CATEGORICAL_PRIORITIES.
    categorical_priority: str = 'kl'
    initial_beta: float = 0.4          # importance exponent, annealed to 1 over total_steps
    initial_epsilon: float = 1.0
    final_epsilon: float = 0.1
    epsilon_decay_steps: int = 1_000_000
    # Evaluation (section 4.2): "paused every 1-million steps to evaluate for up to 125,000
    # steps, with maximum path length of 27,000 steps"; 0 disables it. What it plays (in-run and
    # common.evaluate): a name in common/envs/eval_protocols.py or @EvalProtocol(); 'stooke':
    # that budget over 4 environments at epsilon 0.001, both rlpyt's (the paper states neither).
    eval_every_steps: int = 1_000_000
    eval_protocol: Any = 'stooke'
    # Section 5.3: sampling and optimization in turn (False) or at once, a trainer thread
    # training each phase's updates while the next phase samples (True); the sampler waits
    # while more than async_lead_phases phases' updates are owed, which holds the replay ratio.
    asynchronous: bool = False
    async_lead_phases: int = 1
    # Minibatches from replay: 'direct' (drawn when the learner asks) or 'tf_data' (a tf.data
    # pipeline prefetching the next draw); measured in BENCHMARKS.md (accel/dqn_512/tf_data).
    replay_input: str = 'direct'

    @property
    def support(self):
        """The categorical atoms, evenly spaced on [v_min, v_max]; None for DQN."""
        if self.num_atoms == 1:
            return None
        spacing = (self.v_max - self.v_min) / (self.num_atoms - 1)
        return [self.v_min + index * spacing for index in range(self.num_atoms)]

    def validate(self, config):
        """Raises ConfigError naming the first value out of range for config's algorithm."""
        require = checks.require
        super().validate(config)
        row = config.row
        checks.require_positive_ints('QValueConfig', self, (
            'batch_size', 'updates_per_phase', 'replay_capacity', 'min_replay_steps',
            'target_period', 'n_step', 'num_atoms', 'epsilon_decay_steps', 'async_lead_phases'))
        require(self.replay_input in replay_feed.REPLAY_INPUTS,
                f'QValueConfig.replay_input={self.replay_input!r}; allowed: '
                f'{", ".join(replay_feed.REPLAY_INPUTS)}')
        require(self.categorical_priority in losses.CATEGORICAL_PRIORITIES,
                f'QValueConfig.categorical_priority={self.categorical_priority!r}; allowed: '
                f'{", ".join(losses.CATEGORICAL_PRIORITIES)}')
        require(self.eval_every_steps >= 0,
                f'QValueConfig.eval_every_steps must be >= 0, got {self.eval_every_steps}')
        self.evaluation_protocol(config.env_config)
        require(row.categorical == (self.num_atoms > 1),
                f"QValueConfig.num_atoms={self.num_atoms}; algorithm={row.name!r} needs "
                f"{'>= 2 atoms' if row.categorical else '1 (no atoms)'}")
        require(self.v_min < self.v_max,
                f'QValueConfig.v_min={self.v_min} must be below v_max={self.v_max}')
        require(self.priority_alpha >= 0,
                f'QValueConfig.priority_alpha must be >= 0, got {self.priority_alpha}')
        checks.require_fractions('QValueConfig', self, ('initial_beta', 'initial_epsilon',
                                                        'final_epsilon'))
        require(self.clip_norm >= 0,
                f'QValueConfig.clip_norm must be >= 0, got {self.clip_norm}')
        require(self.huber_delta > 0,
                f'QValueConfig.huber_delta must be > 0, got {self.huber_delta}')
        require(self.batch_size <= self.min_replay_steps <= self.replay_capacity,
                f'QValueConfig needs batch_size <= min_replay_steps <= replay_capacity, got '
                f'{self.batch_size}, {self.min_replay_steps}, {self.replay_capacity}')
        stack = getattr(config.env_config, 'stack', 1)
        per_stream = self.replay_capacity // config.num_envs
        require(per_stream >= stack + self.n_step,
                f'QValueConfig.replay_capacity={self.replay_capacity} gives {per_stream} steps '
                f'per simulator for {config.num_envs} simulators; need at least stack + n_step '
                f'= {stack + self.n_step}')

    def evaluation_protocol(self, env_config):
        """The run's evaluation protocol, checked for a Q-value policy on env_config."""
        return eval_protocols.require(self.eval_protocol, 'QValueConfig.eval_protocol',
                                      'q_values', env_config)

    def validate_distribute(self, config, distribute):
        checks.require(distribute.strategy != 'multi_worker' or not self.asynchronous,
                       "QValueConfig.asynchronous=True is not built for DistributeConfig."
                       "strategy='multi_worker'; bind QValueConfig.asynchronous = False")
        checks.require(self.batch_size % distribute.num_replicas == 0,
                       f'QValueConfig.batch_size={self.batch_size} does not split evenly over '
                       f'DistributeConfig.num_replicas={distribute.num_replicas}')

    def validate_cluster(self, config, num_machines):
        config_lib.require_cluster_split('QValueConfig', num_machines,
                                         batch_size=self.batch_size)
