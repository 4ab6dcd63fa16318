"""Fast DQN (Daley & Amato 2021): Nature DQN with concurrent training and synchronized execution.

Four execution modes, each with W sampler threads that own one environment apiece:
  standard      every sampler computes its own action with the online network; one minibatch
                is trained in the main thread every F steps;
  concurrent    actions come from the target network, so a trainer thread trains the C/F
                minibatches of a target period while the samplers collect its C steps; the new
                steps wait in per-sampler staging buffers until the period ends (section 3);
  synchronized  the W samplers step, then one batched inference gives all W actions (sec. 4);
  both          Algorithm 1: concurrent and synchronized.
The main thread only orchestrates; samplers and the trainer wait for it (rounds.RoundGate, the
trainer's events), so the order of minibatches and of replay writes is fixed for a fixed seed and W.
All acting runs on the sampler threads (sampler 0 makes the batched inference at the start of a
round), so that in the concurrent modes it can yield the CPU to the learner (acting_nice).
"""
import concurrent.futures
import dataclasses
import os
import sys
import threading
import time
from typing import Any, Optional

from absl import logging
import gin
import numpy as np
import tensorflow as tf

from common import app
from common import evaluate
from common import interval_means
from common import losses
from common import networks
from common import optim
from common import replay as replay_lib
from common import tracker as tracker_lib
# Registers AtariConfig and GymConfig with gin, which the presets bind before any env exists.
from common.envs import atari  # noqa: F401
from common.envs import gym as gym_envs  # noqa: F401
from dqn_tf import rounds

MODES = ('standard', 'concurrent', 'synchronized', 'both')


@gin.configurable
@dataclasses.dataclass
class DQNConfig:
    """Every fast-DQN knob; defaults are the paper's (Table 5, sec. 5); gin/dqn/*.gin cites them."""
    env_config: Any = None             # @AtariConfig() or @GymConfig()
    num_workers: int = 8               # W sampler threads
    concurrent: bool = True            # act with the target network, train on a thread
    synchronized: bool = True          # one batched inference for the W samplers' states
    total_steps: int = 50_000_000      # training timesteps (x4 frames), after prepopulation
    batch_size: int = 32
    replay_capacity: int = 1_000_000
    target_period: int = 10_000        # C
    train_period: int = 4              # F
    gamma: float = 0.99
    prepopulate_steps: int = 50_000    # N uniformly random steps before training
    network: str = 'nature'
    double_dqn: bool = False
    learning_rate: float = 2.5e-4
    rmsprop_decay: float = 0.95
    rmsprop_epsilon: float = 0.01
    huber_delta: float = 1.0
    initial_epsilon: float = 1.0
    final_epsilon: float = 0.1
    epsilon_decay_steps: int = 1_000_000
    eval_every_steps: int = 250_000    # 0 disables evaluation
    eval_episodes: int = 30
    eval_epsilon: float = 0.05
    seed: int = 0
    # TF intra-op threads of the learner (0: TF's default, every core). None: the CPUs less one,
    # at least 1: the samplers share one GIL, so they keep about one core busy, and a learner
    # spread over that core too makes both slower (measured: README, Fast DQN).
    learner_threads: Optional[int] = None
    # Concurrent trainer: minibatches per tf.function call (a graph loop over a stack of them).
    # Replay is frozen during a period, so this changes no update, only the calls: 1 is one call
    # per minibatch. Measured: README, Fast DQN.
    minibatches_per_call: int = 8
    # Concurrent modes: how much nicer (0-19, Linux) than the learner the sampler threads run,
    # so the learner's threads get the cores first and acting fills what they leave idle. 0: one
    # priority for all. Measured: README, Fast DQN.
    acting_nice: int = 19
    log_every_seconds: float = 10.0
    checkpoint_every_steps: int = 1_000_000

    def intra_op_threads(self):
        """What learner_threads resolves to on this machine."""
        if self.learner_threads is None:
            return max(1, (os.cpu_count() or 1) - 1)
        return self.learner_threads

    @property
    def mode(self):
        return {(False, False): 'standard', (True, False): 'concurrent',
                (False, True): 'synchronized', (True, True): 'both'}[
                    (bool(self.concurrent), bool(self.synchronized))]

    def validate(self):
        """Raises ConfigError naming the first out-of-range value."""
        require = app.require
        app.require_field_types('DQNConfig', self)
        app.require_env_config('DQNConfig', self.env_config)
        optim.require_rmsprop_bindings(
            'DQNConfig', fixed=('centered', 'epsilon_inside_sqrt', 'initial_mean_square'),
            reason="fast DQN always runs the paper's centered RMSProp (epsilon inside the sqrt, "
                   'mean squares from zeros)')
        app.require_positive_ints('DQNConfig', self, ('num_workers', 'total_steps', 'batch_size', 'replay_capacity',
                     'target_period', 'train_period', 'prepopulate_steps',
                     'epsilon_decay_steps', 'eval_episodes', 'checkpoint_every_steps',
                     'minibatches_per_call'))
        require(isinstance(self.eval_every_steps, int) and self.eval_every_steps >= 0,
                f'DQNConfig.eval_every_steps must be an integer >= 0, '
                f'got {self.eval_every_steps!r}')
        require(self.target_period % self.num_workers == 0,
                f'DQNConfig.target_period={self.target_period} (C) must be divisible by '
                f'num_workers={self.num_workers} (W)')
        require(self.target_period % self.train_period == 0,
                f'DQNConfig.target_period={self.target_period} (C) must be divisible by '
                f'train_period={self.train_period} (F)')
        require(self.total_steps % self.num_workers == 0,
                f'DQNConfig.total_steps={self.total_steps} must be divisible by '
                f'num_workers={self.num_workers}')
        require(self.replay_capacity >= self.target_period,
                f'DQNConfig.replay_capacity={self.replay_capacity} must be >= '
                f'target_period={self.target_period} (a period is staged before replay)')
        require(self.prepopulate_steps >= self.batch_size,
                f'DQNConfig.prepopulate_steps={self.prepopulate_steps} must be >= '
                f'batch_size={self.batch_size}')
        require(self.network in networks.NETWORK_NAMES,
                f'DQNConfig.network={self.network!r}; allowed: {sorted(networks.NETWORK_NAMES)}')
        require(0 < self.gamma <= 1, f'DQNConfig.gamma must be in (0, 1], got {self.gamma}')
        require(self.learning_rate > 0,
                f'DQNConfig.learning_rate must be > 0, got {self.learning_rate}')
        require(self.learner_threads is None or (
            isinstance(self.learner_threads, int) and not isinstance(self.learner_threads, bool)
            and self.learner_threads >= 0),
            f'DQNConfig.learner_threads must be None or an int >= 0, '
            f'got {self.learner_threads!r}')
        require(0 < self.rmsprop_decay < 1,
                f'DQNConfig.rmsprop_decay must be in (0, 1), got {self.rmsprop_decay}')
        require(isinstance(self.acting_nice, int) and not isinstance(self.acting_nice, bool)
                and 0 <= self.acting_nice <= 19,
                f'DQNConfig.acting_nice must be an int in [0, 19], got {self.acting_nice!r}')
        require(self.rmsprop_epsilon > 0,
                f'DQNConfig.rmsprop_epsilon must be > 0, got {self.rmsprop_epsilon}')
        require(self.huber_delta > 0,
                f'DQNConfig.huber_delta must be > 0, got {self.huber_delta}')
        for name in ('initial_epsilon', 'final_epsilon', 'eval_epsilon'):
            value = getattr(self, name)
            require(0 <= value <= 1, f'DQNConfig.{name} must be in [0, 1], got {value}')
        require(self.log_every_seconds > 0,
                f'DQNConfig.log_every_seconds must be > 0, got {self.log_every_seconds}')

    @property
    def stack(self):
        return getattr(self.env_config, 'stack', 1)

    def epsilon(self, step):
        """Exploration rate at training step `step`: linear from initial to final, then flat."""
        fraction = min(step / self.epsilon_decay_steps, 1.0)
        return self.initial_epsilon + fraction * (self.final_epsilon - self.initial_epsilon)


class DQNLearner(tf.Module):
    """Online and target Q networks, centered RMSProp, and the tf.functions of the hot path."""

    def __init__(self, config, observation_shape, observation_dtype, num_actions):
        super().__init__(name='dqn_learner')
        self.config = config
        self.num_actions = num_actions
        make = lambda: networks.make_q_network(  # noqa: E731
            num_actions=num_actions, observation_shape=observation_shape,
            observation_dtype=observation_dtype, network=config.network)
        self.online = make()
        self.target = make()
        self.optimizer = optim.RMSProp(
            learning_rate=config.learning_rate, decay=config.rmsprop_decay,
            epsilon=config.rmsprop_epsilon, centered=True, epsilon_inside_sqrt=True,
            initial_mean_square=0.0)  # DeepMind's centered RMSProp and tf.keras' start at zeros
        self.optimizer.build(self.online.trainable_variables)
        self.update_means = interval_means.IntervalMeans(('loss',))
        observation_spec = tf.TensorSpec((None,) + tuple(observation_shape),
                                         tf.as_dtype(observation_dtype))
        self.online_greedy = tf.function(lambda obs: self._greedy(self.online, obs),
                                         input_signature=[observation_spec])
        self.target_greedy = tf.function(lambda obs: self._greedy(self.target, obs),
                                         input_signature=[observation_spec])
        batch_signature = [
            observation_spec, tf.TensorSpec((None,), tf.int32), tf.TensorSpec((None,), tf.float32),
            observation_spec, tf.TensorSpec((None,), tf.float32)]
        self.train_step = tf.function(self._train_step, input_signature=batch_signature)
        self.train_steps = tf.function(self._train_steps, input_signature=[
            tf.TensorSpec((None,) + tuple(spec.shape), spec.dtype) for spec in batch_signature])
        self.update_target()
        # Trace everything here, in one thread: Keras models are not safe to trace from the
        # sampler and trainer threads at once.
        for function in (self.online_greedy, self.target_greedy, self.train_step,
                         self.train_steps):
            function.get_concrete_function()

    @staticmethod
    def _greedy(model, observations):
        return tf.argmax(model(observations), axis=-1, output_type=tf.int32)

    def update_target(self):
        """theta^- <- theta (eagerly: once per C steps, and no trace per learner instance)."""
        for target, online in zip(self.target.variables, self.online.variables):
            target.assign(online)

    def loss(self, observations, actions, rewards, next_observations, terminals):
        """Mean Huber TD loss of the online network against the target network's bootstrap."""
        config = self.config
        next_q_target = self.target(next_observations)
        next_q_online = self.online(next_observations) if config.double_dqn else None
        return losses.dqn_loss(self.online(observations), actions, rewards, terminals,
                               next_q_target, config.gamma, next_q_online=next_q_online,
                               huber_delta=config.huber_delta).loss

    def _train_step(self, observations, actions, rewards, next_observations, terminals):
        variables = self.online.trainable_variables
        with tf.GradientTape() as tape:
            loss = self.loss(observations, actions, rewards, next_observations, terminals)
        self.optimizer.apply_gradients(tape.gradient(loss, variables), variables)
        self.update_means.add({'loss': loss})
        return loss

    def _train_steps(self, observations, actions, rewards, next_observations, terminals):
        """One update per minibatch of a (K, B, ...) stack, in order; returns the last loss.

        A graph loop rather than K calls: the next minibatch's target-network pass, which no
        update in between changes, can run while the current update finishes.
        """
        loss = tf.constant(0.0)
        for index in tf.range(tf.shape(actions)[0]):
            loss = self._train_step(observations[index], actions[index], rewards[index],
                                    next_observations[index], terminals[index])
        return loss


def build_learner(config):
    env_config = config.env_config
    return DQNLearner(config, env_config.observation_shape, env_config.observation_dtype,
                      env_config.num_actions())


def lower_thread_priority(increment):
    """Makes the calling thread `increment` nicer, up to 19 (Linux, where niceness is per thread;
    raising it needs no privileges). Elsewhere, or if the kernel refuses, it changes nothing."""
    if increment <= 0 or not sys.platform.startswith('linux'):
        return
    thread_id = threading.get_native_id()
    try:
        niceness = os.getpriority(os.PRIO_PROCESS, thread_id)
        os.setpriority(os.PRIO_PROCESS, thread_id, min(19, niceness + increment))
    except OSError as error:
        logging.warning('could not lower the priority of %s: %s',
                        threading.current_thread().name, error)


class Sampler(threading.Thread):
    """One environment stepped one step per round; writes its state into a shared row."""

    def __init__(self, index, runner, env, seed):
        super().__init__(name=f'dqn-sampler-{index}', daemon=True)
        self.index = index
        self.runner = runner
        self.env = env
        self.rng = np.random.default_rng([seed, index])
        self.num_actions = runner.num_actions
        self.staging = replay_lib.StagingBuffer(runner.staging_length, runner.replay.frame_shape,
                                                runner.replay.observation_dtype)
        self.episode_start = True
        self.finished_episodes = []  # (score, length) since the last drain
        self.error = None
        runner.observations[index] = env.reset()

    def run(self):
        lower_thread_priority(self.runner.acting_nice)
        gate = self.runner.gate
        while gate.wait_for_round(self.index):
            try:
                self.step()
            except BaseException as error:  # raised in the main thread by RoundGate.run_round
                self.error = error
                gate.finish(self.index, failed=True)
                return
            gate.finish(self.index)

    def step(self):
        """One epsilon-greedy (or, while prepopulating, uniformly random) step."""
        runner = self.runner
        if self.index == 0 and runner.config.synchronized and not runner.random_actions:
            # The round's one batched inference: sampler 0 goes first, the others still wait.
            runner.greedy_actions[:] = runner.act_fn(runner.observations).numpy()
        observation = runner.observations[self.index]
        if runner.random_actions or self.rng.random() < runner.epsilon:
            action = int(self.rng.integers(self.num_actions))
        elif runner.config.synchronized:
            action = int(runner.greedy_actions[self.index])
        else:
            action = int(runner.act_fn(observation[None]).numpy()[0])
        next_observation, reward, terminal, done = self.env.step(action)
        self.staging.add(runner.replay.newest_frame(observation), action, reward, terminal,
                         self.episode_start)
        self.episode_start = bool(done)
        if done:
            self.finished_episodes.append((float(self.env.episode_return),
                                           int(self.env.episode_length)))
            next_observation = self.env.reset()
        observation[...] = next_observation


def train_prefetched(runner, num_minibatches, prefetcher, stop=lambda: False):
    """Trains num_minibatches on runner in calls of up to config.minibatches_per_call, drawing
    the next call's minibatches on `prefetcher` (a one-thread executor) while the current call
    trains; returns early once stop() is true.

    Replay is frozen while this runs (concurrent periods stage new steps), and one thread draws
    the minibatches in order, so the order stays deterministic; the draw (numpy, cv2) runs while
    the update holds no GIL, which takes it off the learner's critical path.
    """
    config = runner.config
    group_sizes = [min(config.minibatches_per_call, num_minibatches - start)
                   for start in range(0, num_minibatches, config.minibatches_per_call)]

    def draw(group_size):
        return runner.replay.sample_stacked(group_size, config.batch_size)

    next_group = prefetcher.submit(draw, group_sizes[0]) if group_sizes else None
    for index in range(len(group_sizes)):
        group = next_group.result()
        if stop():
            return
        if index + 1 < len(group_sizes):
            next_group = prefetcher.submit(draw, group_sizes[index + 1])
        runner.train_on_stack(group)


class Trainer(threading.Thread):
    """The concurrent-training thread: trains a dispatched number of minibatches, then reports."""

    def __init__(self, runner):
        super().__init__(name='dqn-trainer', daemon=True)
        self.runner = runner
        self._dispatched = threading.Event()
        self._finished = threading.Event()
        self._finished.set()
        self._pending = 0
        self.error = None
        self._prefetcher = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix='dqn-replay-prefetch')

    def dispatch(self, num_minibatches):
        self._finished.clear()
        self._pending = num_minibatches
        self._dispatched.set()

    def wait(self):
        """Blocks until the dispatched minibatches are done; re-raises the thread's error."""
        while not self._finished.wait(timeout=1.0):
            if not self.is_alive():
                break
        if self.error is not None:
            raise RuntimeError('dqn trainer thread failed') from self.error

    def stop(self):
        self._pending = 0
        self._dispatched.set()
        self._prefetcher.shutdown(wait=True)

    def _train_dispatched(self, runner):
        train_prefetched(runner, self._pending, self._prefetcher,
                         stop=lambda: runner.stopping or self._pending <= 0)
        self._pending = 0

    def run(self):
        runner = self.runner
        try:
            while True:
                self._dispatched.wait()
                self._dispatched.clear()
                if runner.stopping:
                    return
                self._train_dispatched(runner)
                self._finished.set()
        except BaseException as error:  # handed to the main thread by wait()
            self.error = error
            self._finished.set()
        finally:
            self._prefetcher.shutdown(wait=True)


class FastDQN:
    """Algorithm 1's main thread over W samplers (and a trainer thread when concurrent)."""

    def __init__(self, config, learner, seed):
        self.config = config
        self.learner = learner
        env_config = config.env_config
        self.num_actions = env_config.num_actions()
        num_workers = config.num_workers
        observation_shape = tuple(env_config.observation_shape)
        self.replay = replay_lib.ReplayMemory(
            config.replay_capacity, observation_shape, env_config.observation_dtype,
            config.stack, num_streams=num_workers, seed=seed)
        self.staging_length = config.target_period // num_workers
        # The paper's shared arrays: each sampler's current state, and the actions for them.
        self.observations = np.zeros((num_workers,) + observation_shape,
                                     env_config.observation_dtype)
        self.greedy_actions = np.zeros(num_workers, np.int32)
        self.act_fn = learner.target_greedy if config.concurrent else learner.online_greedy
        self.acting_nice = config.acting_nice if config.concurrent else 0
        self.epsilon = 1.0
        self.random_actions = False
        self.stopping = False
        # Synchronized samplers only emulate (sampler 0 first makes the batched inference), so
        # they hand on one by one; the others' own inference overlaps, so they start together.
        self.gate = rounds.RoundGate(num_workers, chained=config.synchronized)
        self.samplers = []
        self.trainer = None
        self.minibatches = 0  # trained by this runner (any thread)
        self.steps_since_train = 0
        try:
            for index in range(num_workers):
                self.samplers.append(Sampler(index, self, env_config.make(seed * 1009 + index),
                                             seed))
            for sampler in self.samplers:
                sampler.start()
            if config.concurrent:
                self.trainer = Trainer(self)
                self.trainer.start()
        except BaseException:
            self.close()
            raise

    def close(self):
        """Stops and joins every thread this runner started, and closes the environments."""
        self.stopping = True
        self.gate.close()
        if self.trainer is not None:
            self.trainer.stop()
        for thread in self.samplers + ([self.trainer] if self.trainer else []):
            if thread.is_alive():
                thread.join()
        for sampler in self.samplers:
            sampler.env.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _round(self):
        """Every sampler takes one step; returns when all have."""
        self.gate.run_round(self.samplers, lambda: [
            (sampler.name, sampler.error) for sampler in self.samplers
            if sampler.error is not None])

    def _flush(self):
        for sampler in self.samplers:
            sampler.staging.flush_into(self.replay, sampler.index)

    def prepopulate(self, num_steps):
        """Fills replay with at least num_steps uniformly random steps (not training steps)."""
        self.random_actions = True
        for _ in range(-(-num_steps // self.config.num_workers)):
            self._round()
            self._flush()
        self.random_actions = False
        self.drain_episodes()

    def train_minibatch(self):
        self.train_on(self.replay.sample(self.config.batch_size))

    def train_on(self, batch):
        self.learner.train_step(*batch)
        self.minibatches += 1

    def train_on_stack(self, batches):
        """Trains a (K, B, ...) stack of minibatches (replay.sample_stacked) in one call."""
        self.learner.train_steps(*batches)
        self.minibatches += len(batches.actions)

    def run_period(self, first_step, num_steps, on_round=None):
        """num_steps training steps from step first_step, as one target period (C steps or the
        rest of the run): target <- online, then rounds of W steps with training (inline every F
        steps, or C/F minibatches on the trainer thread, joined before returning)."""
        config = self.config
        num_workers = config.num_workers
        self._flush()  # the previous period's steps (concurrent mode) enter replay now
        self.learner.update_target()
        if config.concurrent:
            self.trainer.dispatch(num_steps // config.train_period)
        step = first_step
        try:
            for _ in range(num_steps // num_workers):
                self.epsilon = config.epsilon(step)
                self._round()
                step += num_workers
                if not config.concurrent:
                    self._flush()
                    self.steps_since_train += num_workers
                    while self.steps_since_train >= config.train_period:
                        self.train_minibatch()
                        self.steps_since_train -= config.train_period
                if on_round is not None:
                    on_round(num_workers)
        except BaseException:
            # Ctrl-C or a failed sampler: end the trainer after its current minibatch.
            self.stopping = True
            if config.concurrent:
                self.trainer.stop()
                self.trainer.wait()
            raise
        if config.concurrent:
            self.trainer.wait()
        return step

    def drain_episodes(self):
        episodes = []
        for sampler in self.samplers:
            episodes.extend(sampler.finished_episodes)
            sampler.finished_episodes = []
        return episodes


DQN_COLUMNS = ('epsilon', 'loss', 'replay_size', 'minibatches')


def epsilon_greedy_policy(learner, epsilon, seed):
    """policy_fn for common.evaluate: epsilon-greedy on the online network, batched."""
    rng = np.random.default_rng(seed)
    num_actions = learner.num_actions

    def policy(observations):
        actions = learner.online_greedy(observations).numpy()
        explore = rng.random(len(actions)) < epsilon
        actions[explore] = rng.integers(num_actions, size=int(explore.sum()))
        return actions

    return policy


def evaluate_now(config, learner, run_dir, env_steps, trained_seconds):
    """The paper's evaluation round (epsilon 0.05, separate environments) into eval.csv."""
    start = time.perf_counter()
    scores = evaluate.run_episodes(
        evaluate.evaluation_env_config(config.env_config),
        epsilon_greedy_policy(learner, config.eval_epsilon, config.seed + env_steps),
        config.eval_episodes, seed=config.seed + 7919 + env_steps)
    row = evaluate.write_eval_row(run_dir, env_steps, scores, time.perf_counter() - start,
                                  trained_seconds)
    print(f"eval at step {env_steps:,}: mean {row['score_mean']:.2f} over "
          f"{row['episodes']} episodes", flush=True)
    return row


def train(config, run_dir, on_start=None):
    """Trains until config.total_steps, resuming counters, networks and optimizer from run_dir.

    Replay contents do not survive a restart: a resumed run prepopulates again. on_start() is
    called once the run is known not to be complete, before the samplers start.
    """
    learner = build_learner(config)
    tracker = tracker_lib.tracker_for(
        run_dir, config, DQN_COLUMNS,
        {'online': learner.online, 'target': learner.target, 'optimizer': learner.optimizer})

    def open_runner():
        if on_start is not None:
            on_start()
        # A resumed run continues with fresh environments, seeded apart from the first session.
        return FastDQN(config, learner, seed=config.seed + tracker.env_steps)

    return tracker_lib.run_training(
        tracker, open_runner, lambda runner: _train_loop(config, runner, tracker, run_dir),
        resume_note=' (replay memory is refilled)')


def _train_loop(config, runner, tracker, run_dir):
    print(f'{config.mode} DQN, {config.num_workers} sampler threads; prepopulating '
          f'{config.prepopulate_steps:,} random steps', flush=True)
    runner.prepopulate(config.prepopulate_steps)
    tracker.start_interval()
    counted = {'minibatches': runner.minibatches}

    def on_round(steps):
        tracker.add_steps(steps, updates=runner.minibatches - counted['minibatches'])
        counted['minibatches'] = runner.minibatches
        tracker.add_episodes(runner.drain_episodes())
        if tracker.interval_due():
            _log_interval(runner, tracker)

    while not tracker.done:
        period = min(config.target_period, config.total_steps - tracker.env_steps)
        previous = tracker.env_steps
        runner.run_period(tracker.env_steps, period, on_round)
        on_round(0)
        if tracker.done:
            _log_interval(runner, tracker)
        tracker.maybe_checkpoint()
        if config.eval_every_steps and (tracker.env_steps // config.eval_every_steps
                                        > previous // config.eval_every_steps):
            evaluate_now(config, runner.learner, run_dir, tracker.env_steps,
                         tracker.clock.elapsed())


def _log_interval(runner, tracker):
    """One metrics row; loss is the mean over the interval's minibatches (NaN with none)."""
    tracker.log_interval(int(runner.learner.optimizer.iterations.numpy()), {
        'epsilon': runner.epsilon, **runner.learner.update_means.take(),
        'replay_size': len(runner.replay), 'minibatches': runner.minibatches})
