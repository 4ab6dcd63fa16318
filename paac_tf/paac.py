"""PAAC (Clemente et al. 2017, Algorithm 1): ne environments stepped by nw worker processes, one
batched policy/value forward per time step, one update on the ne*t_max batch every t_max steps.
"""
import dataclasses
import time
from typing import Any, Optional

import gin
import numpy as np
import tensorflow as tf

from common import app
from common import interval_means
from common import losses
from common import networks
from common import optim
from common import tracker as tracker_lib
# Registers AtariConfig and GymConfig with gin, which the presets bind before any env exists.
from common.envs import atari  # noqa: F401
from common.envs import gym as gym_envs  # noqa: F401


@gin.configurable
@dataclasses.dataclass
class PAACConfig:
    """Every PAAC knob; defaults are the paper's (section 5.1), gin/paac/*.gin cite each."""
    env_config: Any = None             # @AtariConfig() or @GymConfig()
    num_envs: int = 32                 # ne
    num_workers: int = 8               # nw worker processes stepping ne/nw environments each
    t_max: int = 5
    total_steps: int = 115_000_000     # Nmax, in agent steps (x4 frames)
    network: str = 'nips'              # archnips; 'nature' for archnature
    learning_rate: float = 0.0224      # 0.0007 * ne
    final_learning_rate: float = 0.0   # annealed linearly ...
    anneal_steps: Optional[int] = None  # ... over this many agent steps (None: total_steps)
    rmsprop_decay: float = 0.99
    rmsprop_epsilon: float = 0.1
    entropy_coef: float = 0.01         # beta
    # The loss as the authors' code computes it (alfredvc/paac policy_v_network.py):
    # loss_scale * (mean actor objective + value_loss_coef * mean (R - V)^2). Equations (10)-(11)
    # print the plain means (loss_scale 1, value_loss_coef 1); the code's 5 restores the sum over
    # the t_max = 5 steps that alpha was tuned for.
    loss_scale: float = 5.0
    value_loss_coef: float = 0.25
    initializer: str = 'fan_in_uniform'  # the code's U(+-1/sqrt(fan_in)); 'glorot_uniform': Keras
    clip_norm: float = 40.0            # global-norm gradient clipping; 0 disables
    gamma: float = 0.99
    seed: int = 0
    # Stooke & Abbeel's alternating sampler: half the environments step while the policy runs on
    # the other half. Same actions distribution and updates as Algorithm 1; only the schedule
    # differs. Off by default (the paper steps all ne, then runs one forward).
    alternating_halves: bool = False
    log_every_seconds: float = 10.0
    checkpoint_every_steps: int = 1_000_000

    def validate(self):
        """Raises ConfigError naming the first out-of-range value."""
        require = app.require
        app.require_field_types('PAACConfig', self)
        app.require_env_config('PAACConfig', self.env_config)
        optim.require_rmsprop_bindings('PAACConfig')
        app.require_positive_ints('PAACConfig', self, ('num_envs', 'num_workers', 't_max', 'total_steps'))
        require(not self.alternating_halves or self.num_workers % 2 == 0,
                f'PAACConfig.alternating_halves needs an even num_workers, '
                f'got {self.num_workers}')
        require(self.num_envs % self.num_workers == 0,
                f'PAACConfig.num_envs={self.num_envs} must be divisible by '
                f'num_workers={self.num_workers}')
        require(self.network in networks.NETWORK_NAMES,
                f'PAACConfig.network={self.network!r}; allowed: {sorted(networks.NETWORK_NAMES)}')
        require(self.learning_rate > 0, f'PAACConfig.learning_rate must be > 0, '
                                        f'got {self.learning_rate}')
        require(self.anneal_steps is None or self.anneal_steps > 0,
                f'PAACConfig.anneal_steps must be > 0 or None, got {self.anneal_steps}')
        require(0 < self.gamma <= 1, f'PAACConfig.gamma must be in (0, 1], got {self.gamma}')
        require(self.clip_norm >= 0, f'PAACConfig.clip_norm must be >= 0, got {self.clip_norm}')
        require(self.entropy_coef >= 0,
                f'PAACConfig.entropy_coef must be >= 0, got {self.entropy_coef}')
        require(self.value_loss_coef >= 0,
                f'PAACConfig.value_loss_coef must be >= 0, got {self.value_loss_coef}')
        require(self.loss_scale > 0, f'PAACConfig.loss_scale must be > 0, got {self.loss_scale}')
        require(self.initializer in networks.INITIALIZERS,
                f'PAACConfig.initializer={self.initializer!r}; allowed: {networks.INITIALIZERS}')
        require(self.log_every_seconds > 0, f'PAACConfig.log_every_seconds must be > 0, '
                                            f'got {self.log_every_seconds}')
        require(self.checkpoint_every_steps > 0, f'PAACConfig.checkpoint_every_steps must be '
                                                 f'> 0, got {self.checkpoint_every_steps}')

    @property
    def steps_per_update(self):
        return self.num_envs * self.t_max


def sample_actions(logits, generator):
    """Samples one action per row of logits by the Gumbel-max trick from a seeded generator."""
    uniform = generator.uniform(tf.shape(logits), minval=1e-20, maxval=1.0)
    return tf.argmax(logits - tf.math.log(-tf.math.log(uniform)), axis=-1, output_type=tf.int32)


class PAACLearner(tf.Module):
    """The shared policy/value network, its optimizer and the two tf.functions of the hot path."""

    def __init__(self, config, observation_shape, observation_dtype, num_actions):
        super().__init__(name='paac_learner')
        self.config = config
        self.model = networks.make_actor_critic(
            num_actions=num_actions, observation_shape=observation_shape,
            observation_dtype=observation_dtype, network=config.network,
            initializer=config.initializer, seed=config.seed)
        anneal_updates = max(1, (config.anneal_steps or config.total_steps)
                             // config.steps_per_update)
        self.optimizer = optim.RMSProp(
            learning_rate=optim.LinearSchedule(config.learning_rate, config.final_learning_rate,
                                               anneal_updates),
            decay=config.rmsprop_decay, epsilon=config.rmsprop_epsilon)
        self.optimizer.build(self.model.trainable_variables)
        self.generator = tf.random.Generator.from_seed(config.seed)
        self.update_means = interval_means.IntervalMeans(UPDATE_STATS)
        dtype = tf.as_dtype(observation_dtype)
        self.act = tf.function(self._act, input_signature=[
            tf.TensorSpec((None,) + tuple(observation_shape), dtype)])
        t_max = config.t_max
        self.train_step = tf.function(self._train_step, input_signature=[
            tf.TensorSpec((t_max + 1, None) + tuple(observation_shape), dtype),
            tf.TensorSpec((t_max, None), tf.int32),
            tf.TensorSpec((t_max, None), tf.float32),
            tf.TensorSpec((t_max, None), tf.float32)])
        self.greedy_act = tf.function(self._greedy_act, input_signature=[
            tf.TensorSpec((None,) + tuple(observation_shape), dtype)])

    def _act(self, observations):
        logits, _ = self.model(observations)
        return sample_actions(logits, self.generator)

    def _greedy_act(self, observations):
        logits, _ = self.model(observations)
        return tf.argmax(logits, axis=-1, output_type=tf.int32)

    def _train_step(self, observations, actions, rewards, terminals):
        """Algorithm 1, lines 12-19: n-step returns with bootstrap, one update on ne*t_max."""
        config = self.config
        num_steps = config.t_max
        observation_shape = tf.shape(observations)[2:]
        rollout_observations = tf.reshape(observations[:num_steps],
                                          tf.concat([[-1], observation_shape], axis=0))
        # V(s_{tmax+1}) outside the tape: no backward pass over rows that get no gradient.
        _, bootstrap_values = self.model(observations[num_steps])
        returns = losses.n_step_returns(rewards, terminals, bootstrap_values, config.gamma)
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            logits, values = self.model(rollout_observations)
            loss = losses.actor_critic_loss(
                logits=logits, values=values, actions=tf.reshape(actions, [-1]),
                returns=tf.reshape(returns, [-1]), entropy_coef=config.entropy_coef,
                value_loss_coef=config.value_loss_coef)
            objective = config.loss_scale * loss.total
        gradients = tape.gradient(objective, variables)
        stats = optim.apply_actor_critic_gradients(self.optimizer, gradients, variables, loss,
                                                   config.clip_norm)
        self.update_means.add(stats)
        return stats


class RolloutBuffer:
    """The (t_max+1, ne, ...) observation block and (t_max, ne) arrays, filled in place."""

    def __init__(self, t_max, num_envs, observation_shape, observation_dtype):
        self.observations = np.zeros((t_max + 1, num_envs) + tuple(observation_shape),
                                     observation_dtype)
        self.actions = np.zeros((t_max, num_envs), np.int32)
        self.rewards = np.zeros((t_max, num_envs), np.float32)
        self.terminals = np.zeros((t_max, num_envs), np.float32)

    def carry_over(self):
        """The last observation becomes the first of the next rollout."""
        self.observations[0] = self.observations[-1]


class PAAC:
    """The master loop of Algorithm 1 over an env pool; one call of iterate() is one update."""

    def __init__(self, config, pool, learner):
        self.config = config
        self.pool = pool
        self.learner = learner
        self.buffer = RolloutBuffer(config.t_max, config.num_envs, pool.observation_shape,
                                    pool.observation_dtype)
        self.buffer.observations[0] = pool.reset()
        self.phase_seconds = {'env': 0.0, 'act': 0.0, 'learn': 0.0}
        self.finished_episodes = []  # (score, length) since the last drain
        self.last_stats = None

    def iterate(self):
        """t_max batched steps of all environments, then one update (lines 4-19)."""
        if self.config.alternating_halves:
            self._rollout_alternating()
        else:
            self._rollout()
        start = time.perf_counter()
        buffer = self.buffer
        self.last_stats = self.learner.train_step(buffer.observations, buffer.actions,
                                                  buffer.rewards, buffer.terminals)
        self.last_stats['loss'].numpy()  # Waits for the update, so 'learn' time is honest.
        self.phase_seconds['learn'] += time.perf_counter() - start
        buffer.carry_over()

    def _rollout(self):
        """Lines 4-11: one forward for all ne environments, then all of them step."""
        for step in range(self.config.t_max):
            self._act(step, slice(None))
            start = time.perf_counter()
            result = self.pool.step(self.buffer.actions[step])
            self.phase_seconds['env'] += time.perf_counter() - start
            self._store(step, slice(None), result)

    def _rollout_alternating(self):
        """Lines 4-11 with the halves interleaved: half 0 steps while half 1 is acted on."""
        half = self.config.num_envs // 2
        halves = (slice(0, half), slice(half, None))
        t_max = self.config.t_max
        self._act_and_send(0, 0, halves[0])
        for step in range(t_max):
            self._act_and_send(step, 1, halves[1])
            self._receive(step, 0, halves[0])
            if step + 1 < t_max:
                self._act_and_send(step + 1, 0, halves[0])
            self._receive(step, 1, halves[1])

    def _act(self, step, envs):
        start = time.perf_counter()
        self.buffer.actions[step, envs] = self.learner.act(
            self.buffer.observations[step, envs]).numpy()
        self.phase_seconds['act'] += time.perf_counter() - start

    def _act_and_send(self, step, group, envs):
        self._act(step, envs)
        self.pool.step_async(self.buffer.actions[step, envs], group)

    def _receive(self, step, group, envs):
        start = time.perf_counter()
        result = self.pool.step_wait(group)
        self.phase_seconds['env'] += time.perf_counter() - start
        self._store(step, envs, result)

    def _store(self, step, envs, result):
        buffer = self.buffer
        buffer.rewards[step, envs] = result.rewards
        buffer.terminals[step, envs] = result.terminals
        buffer.observations[step + 1, envs] = result.observations
        if result.dones.any():
            for index in np.flatnonzero(result.dones):
                self.finished_episodes.append((float(result.episode_returns[index]),
                                               int(result.episode_lengths[index])))

    def drain_episodes(self):
        episodes, self.finished_episodes = self.finished_episodes, []
        return episodes

    def take_phase_seconds(self):
        phases = self.phase_seconds
        self.phase_seconds = {name: 0.0 for name in phases}
        return phases


# Per-update statistics, logged as means over each log interval.
UPDATE_STATS = ('loss', 'policy_loss', 'value_loss', 'entropy', 'grad_norm', 'learning_rate')
PAAC_COLUMNS = ('env_share', 'act_share', 'learn_share') + UPDATE_STATS


def build_learner(config):
    env_config = config.env_config
    return PAACLearner(config, env_config.observation_shape, env_config.observation_dtype,
                       env_config.num_actions())


def train(config, run_dir, make_pool):
    """Runs PAAC until config.total_steps, resuming from run_dir's checkpoint if there is one.

    make_pool(env_config, num_envs, seed, num_workers, num_groups) builds the environment pool.
    """
    learner = build_learner(config)
    tracker = tracker_lib.tracker_for(
        run_dir, config, PAAC_COLUMNS,
        {'model': learner.model, 'optimizer': learner.optimizer, 'generator': learner.generator})
    # A resumed run continues with fresh environments, seeded apart from the first session.
    return tracker_lib.run_training(
        tracker,
        lambda: make_pool(config.env_config, config.num_envs,
                          seed=config.seed + tracker.env_steps, num_workers=config.num_workers,
                          num_groups=2 if config.alternating_halves else 1),
        lambda pool: _train_loop(config, PAAC(config, pool, learner), tracker))


def _train_loop(config, paac, tracker):
    learner = paac.learner
    tracker.start_interval()
    while not tracker.done:
        paac.iterate()
        tracker.add_steps(config.steps_per_update, updates=1)
        tracker.add_episodes(paac.drain_episodes())
        if tracker.interval_due() or tracker.done:
            _log_interval(paac, tracker, learner)
        tracker.maybe_checkpoint()


def _log_interval(paac, tracker, learner):
    phases = paac.take_phase_seconds()
    wall_seconds = tracker.interval_seconds()
    extra = {f'{name}_share': seconds / wall_seconds for name, seconds in phases.items()}
    extra.update(learner.update_means.take())
    tracker.log_interval(int(learner.optimizer.iterations.numpy()), extra)
