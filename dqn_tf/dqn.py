"""Fast DQN (Daley & Amato 2021): Nature DQN with concurrent training and synchronized execution.

W actor threads own one environment apiece (stepped in the thread, or in a worker process of its
own), or one thread steps all W in ale_py's vector env (DQNConfig.actor_envs). Four execution
modes:
- standard: every actor computes its own action with the online network; the main thread trains
  one minibatch every F steps.
- concurrent: actions come from the target network, so a trainer thread trains the C/F minibatches
  of a target period while the actors collect its C steps; the new steps wait in per-actor
  staging buffers until the period ends (section 3).
- synchronized: the W actors step, then one batched inference gives all W actions (section 4).
- both: Algorithm 1, concurrent and synchronized.
The main thread only orchestrates; actors and the trainer wait for it (rounds.RoundGate, the
trainer's events), so the order of minibatches and of replay writes is fixed for a fixed seed and
W. All acting runs on the actor threads (actor 0 makes the batched inference at the start of a
round), so that in the concurrent modes it can yield the CPU to the learner (acting_nice). The
Q-learner is common/learners/q_learner.py; this module holds FastDQN (actors and trainer) and the
unit the run call (common/run/runner.py) drives."""
import os

from absl import logging
import numpy as np
import tensorflow as tf

from common import evaluate
from common.envs import ale_vector
from common.envs import pooled_env
from common.learners import networks
from common.learners import q_learner
from common.replay import replay as replay_lib
from common.replay import replay_files
from common.run import runner
from common.run import tracker as tracker_lib
from common.system import machine_load
from common.system import processes
from dqn_tf import actors
from dqn_tf import rounds
from dqn_tf import trainer as trainer_lib


def build_learner(config):
    """The Q-learner with the paper's network, loss and centered RMSProp."""
    env_config = config.env_config
    num_actions = env_config.num_actions()

    def make_network():
        return networks.make_q_network(
            num_actions=num_actions, observation_shape=env_config.observation_shape,
            observation_dtype=env_config.observation_dtype, network=config.network,
            dueling=config.dueling, torso_kwargs=config.torso_kwargs, seed=config.seed,
            compute_dtype=config.compute_dtype)

    settings = q_learner.QSettings(gamma=config.gamma, double_dqn=config.double_dqn,
                                   huber_delta=config.huber_delta)
    optimizer = q_learner.centered_rmsprop(config.learning_rate, config.rmsprop_decay,
                                           config.rmsprop_epsilon,
                                           config.rmsprop_epsilon_inside_sqrt)
    spec = tf.TensorSpec((None,) + tuple(env_config.observation_shape),
                         tf.as_dtype(env_config.observation_dtype))
    return q_learner.QLearner(make_network, num_actions, optimizer, settings, spec,
                              name='dqn_learner', jit_compile=config.jit_compile)


def _round_order(config):
    """How the W actors take a round (rounds.RoundGate): synchronized in-process actors only
    emulate once actor 0 has the batched actions, one at a time anyway under the GIL, so they hand
    on; in worker processes they emulate side by side, so actor 0 leads and the rest start
    together; unsynchronized actors make their own inference, which overlaps, so all start."""
    if config.actor_envs == 'vector':
        return 'chained'  # one thread for all W
    if not config.synchronized:
        return 'broadcast'
    return 'chained' if config.actor_envs == 'thread' else 'led'


class FastDQN:
    """Algorithm 1's main thread over W actors (and a trainer thread when concurrent)."""

    def __init__(self, config, learner, seed):
        self.config = config
        self.learner = learner
        env_config = config.env_config
        self.num_actions = env_config.num_actions()
        num_actors = config.num_actors
        observation_shape = tuple(env_config.observation_shape)
        self.replay = replay_lib.ReplayMemory(
            config.replay_capacity, observation_shape, env_config.observation_dtype,
            config.stack, num_streams=num_actors, seed=seed, prefault=config.prefault_replay)
        self.staging_length = config.target_period // num_actors
        # The paper's shared arrays: each actor's current state, and the actions for them.
        self.observations = np.zeros((num_actors,) + observation_shape,
                                     env_config.observation_dtype)
        self.greedy_actions = np.zeros(num_actors, np.int32)
        self.act_fn = learner.target_greedy if config.concurrent else learner.online_greedy
        self.acting_nice = config.acting_nice if config.concurrent else 0
        self.epsilon = 1.0
        self.random_actions = False
        self.stopping = False
        vector = config.actor_envs == 'vector'
        self.gate = rounds.RoundGate(1 if vector else num_actors, order=_round_order(config))
        self.actors = []  # the threads that step the environments
        self.lanes = []  # each environment's own rng, staged steps and episodes
        self.trainer = None
        # The actors' worker processes (actor_envs='process') or vector env ('vector').
        self.pool = None
        self.minibatches = 0  # trained by this FastDQN (any thread)
        self.steps_since_train = 0
        try:
            if vector:
                self.pool = self._make_vector_pool(seed)
                self.actors.append(actors.VectorActorThread(self, self.pool, seed))
            else:
                for index, env in enumerate(self._make_envs(seed)):
                    self.actors.append(actors.ActorThread(index, self, env, seed))
            self.lanes = [lane for actor in self.actors for lane in actor.lanes]
            for actor in self.actors:
                actor.start()
            if config.concurrent:
                self.trainer = trainer_lib.TrainerThread(self)
                self.trainer.start()
        except BaseException:
            self.close()
            raise

    def _make_envs(self, seed):
        """The W actors' environments (actor i's seeded seed * 1009 + i), in-process or each in
        a worker process (actor_envs); workers act at the actor threads' lower priority."""
        config = self.config
        if config.actor_envs == 'thread':
            return [config.env_config.make(seed * 1009 + index)
                    for index in range(config.num_actors)]
        self.pool, envs = pooled_env.pooled_envs(config.env_config, config.num_actors,
                                                 seed=seed * 1009)
        for pid in self.pool.pids:
            warning = processes.lower_priority(pid, self.acting_nice)
            if warning:
                logging.warning('%s', warning)
        return envs

    def _make_vector_pool(self, seed):
        """The W environments in one AleVectorPool (env i seeded seed * 1009 + i), its C++
        threads (one per core at most) as nice as the actor threads."""
        tasks = '/proc/self/task'
        before = set(os.listdir(tasks)) if os.path.isdir(tasks) else set()
        num_actors = self.config.num_actors
        pool = ale_vector.AleVectorPool(self.config.env_config, num_actors, seed=seed * 1009,
                                        num_threads=min(num_actors, machine_load.usable_cores()))
        if self.acting_nice and before:
            for thread_id in set(os.listdir(tasks)) - before:
                warning = processes.lower_priority(int(thread_id), self.acting_nice)
                if warning:
                    logging.warning('%s', warning)
        return pool

    def close(self):
        """Stops and joins every thread this FastDQN started, and closes the environments."""
        self.stopping = True
        self.gate.close()
        if self.trainer is not None:
            self.trainer.stop()
        for thread in self.actors + ([self.trainer] if self.trainer else []):
            if thread.is_alive():
                thread.join()
        for actor in self.actors:
            actor.close_env()
        if self.pool is not None:
            self.pool.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _round(self):
        """Every actor takes one step; returns when all have."""
        # A dead worker process first (the other actors then only see its pool closed), then
        # the first failure.
        self.gate.run_round(self.actors, lambda: [
            (actor.name, actor.error) for actor in sorted(
                (actor for actor in self.actors if actor.error is not None),
                key=lambda actor: (not isinstance(actor.error, processes.WorkerDiedError),
                                   actor.error_at))])

    def _flush(self):
        for lane in self.lanes:
            lane.staging.flush_into(self.replay, lane.index)

    def flush_staged(self):
        """Moves the steps still staged into replay, once the FastDQN is closed (no actor steps):
        at a session's end, before replay is saved."""
        if any(actor.is_alive() for actor in self.actors):
            raise RuntimeError('flush_staged while actor threads run; close the FastDQN first')
        self._flush()

    def prepopulate(self, num_steps):
        """Fills replay with at least num_steps uniformly random steps (not training steps)."""
        self.random_actions = True
        for _ in range(-(-num_steps // self.config.num_actors)):
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

    def start_period(self, num_steps):
        """Opens a target period of num_steps training steps (C, or the rest of the run):
        the previous period's staged steps enter replay, target <- online, and in the
        concurrent modes the trainer thread gets the period's C/F minibatches."""
        self._flush()
        self.learner.update_target()
        if self.config.concurrent:
            self.trainer.dispatch(num_steps // self.config.train_period)

    def play_round(self, step):
        """Every actor takes one step at training step `step` (epsilon's schedule); without
        concurrent training, the new steps enter replay and a minibatch trains every F."""
        config = self.config
        self.epsilon = config.epsilon(step)
        self._round()
        if not config.concurrent:
            self._flush()
            self.steps_since_train += config.num_actors
            while self.steps_since_train >= config.train_period:
                self.train_minibatch()
                self.steps_since_train -= config.train_period

    def end_period(self):
        """Joins the trainer thread's minibatches of the period (concurrent modes)."""
        if self.config.concurrent:
            self.trainer.wait()

    def abort_period(self):
        """Ctrl-C or a failed actor mid-period: the trainer ends after its current minibatch."""
        self.stopping = True
        if self.config.concurrent:
            self.trainer.stop()
            self.trainer.wait()

    def run_period(self, first_step, num_steps, on_round=None):
        """num_steps training steps from step first_step as one target period: start_period,
        rounds of W steps (on_round(W) after each), end_period; returns the step reached."""
        num_actors = self.config.num_actors
        self.start_period(num_steps)
        step = first_step
        try:
            for _ in range(num_steps // num_actors):
                self.play_round(step)
                step += num_actors
                if on_round is not None:
                    on_round(num_actors)
        except BaseException:
            self.abort_period()
            raise
        self.end_period()
        return step

    def drain_episodes(self):
        episodes = []
        for lane in self.lanes:
            episodes.extend(lane.finished_episodes)
            lane.finished_episodes = []
        return episodes


DQN_COLUMNS = ('epsilon',) + q_learner.UPDATE_STATS + ('replay_size', 'minibatches')


def train(config, run_dir):
    """Trains until config.total_steps, resuming counters, networks and optimizer from run_dir.

    With DQNConfig.save_replay, a session that ends cleanly saves its replay (run_dir/replay)
    and a resumed run continues from it if it is the replay of the checkpoint resumed from;
    otherwise (none saved, as after a kill; a mismatch; a damaged file) it prepopulates again.
    """
    learner = build_learner(config)
    tracker = tracker_lib.tracker_for(
        run_dir, config, DQN_COLUMNS,
        {'online': learner.online, 'target': learner.target, 'optimizer': learner.optimizer})
    session = {}

    def open_session():
        # A resumed run continues with fresh environments, seeded apart from the first session.
        session['fast_dqn'] = FastDQN(config, learner, seed=config.seed + tracker.env_steps)
        return session['fast_dqn']

    def save_replay(env_steps):
        fast_dqn = session.get('fast_dqn')
        if fast_dqn is not None:
            fast_dqn.flush_staged()  # the last period's staged steps: its actors have stopped
            replay_files.save_for_resume(fast_dqn.replay, run_dir, env_steps)

    return runner.train(
        tracker, open_session, lambda fast_dqn: _unit_of(config, fast_dqn, tracker, run_dir),
        resume_note='' if config.save_replay else ' (replay memory is refilled)',
        session_end=save_replay if config.save_replay else None)


def _actors_of(config):
    """How the W actors step, for the run's first lines."""
    if config.actor_envs == 'vector':
        return f"{config.num_actors} actors in one thread over ale_py's vector env"
    where = ' (environments in worker processes)' if config.actor_envs == 'process' else ''
    return f'{config.num_actors} actor threads{where}'


def _unit_of(config, fast_dqn, tracker, run_dir):
    """The DQNUnit of a session, its replay restored or prepopulated first."""
    restored = bool(config.save_replay and tracker.restored_from) and \
        replay_files.restore_for_resume(fast_dqn.replay, run_dir, tracker.env_steps,
                                        carried=tracker.session_start == 'carried')
    if restored:
        print(f'{config.mode} DQN, {_actors_of(config)}; no prepopulation: '
              'training goes on from the restored replay', flush=True)
    else:
        print(f'{config.mode} DQN, {_actors_of(config)}; prepopulating '
              f'{config.prepopulate_steps:,} random steps', flush=True)
        fast_dqn.prepopulate(config.prepopulate_steps)
    return DQNUnit(config, fast_dqn, run_dir)


class DQNUnit(runner.Unit):
    """One round of the W actors per advance(), inside target periods of C steps: checkpoints
    and the paper's evaluations happen only between periods (at_boundary)."""

    def __init__(self, config, fast_dqn, run_dir):
        self.config = config
        self.fast_dqn = fast_dqn
        self.run_dir = run_dir
        self.period_left = 0
        self.minibatches = fast_dqn.minibatches

    def advance(self, env_steps):
        config, fast_dqn = self.config, self.fast_dqn
        if self.period_left == 0:
            self.period_left = min(config.target_period, config.total_steps - env_steps)
            fast_dqn.start_period(self.period_left)
        try:
            fast_dqn.play_round(env_steps)
            self.period_left -= config.num_actors
            if self.period_left == 0:
                fast_dqn.end_period()
        except BaseException:
            fast_dqn.abort_period()
            raise
        updates, self.minibatches = fast_dqn.minibatches - self.minibatches, fast_dqn.minibatches
        return config.num_actors, updates, fast_dqn.drain_episodes()

    def at_boundary(self):
        return self.period_left == 0

    def updates(self):
        return int(self.fast_dqn.learner.optimizer.iterations.numpy())

    def row(self, seconds):
        """The update statistics are means over the interval's minibatches (NaN with none)."""
        fast_dqn = self.fast_dqn
        return {'epsilon': fast_dqn.epsilon, **fast_dqn.learner.update_means.take(),
                'replay_size': len(fast_dqn.replay), 'minibatches': fast_dqn.minibatches}

    def evaluation_due(self, since, now):
        every = self.config.eval_every_steps
        return bool(every) and now // every > since // every

    def evaluate(self, env_steps, trained_seconds):
        evaluate.q_value_round(self.config, self.fast_dqn.learner, self.run_dir, env_steps,
                     trained_seconds)
