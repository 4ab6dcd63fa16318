"""Off-policy phases: a sampler fills a (T, N) rollout with a Q-learner's epsilon-greedy
actions, each simulator's steps go to its own replay stream, then the learner takes a fixed
number of minibatch updates (Stooke & Abbeel 2018, section 4.2: DQN and its variants on the
same samplers as the policy-gradient methods, sampling and optimizing in turn).

The number of updates per phase holds the replay ratio, the transitions trained per transition
sampled (batch_size x updates_per_phase / (horizon x num_envs); Stooke & Abbeel's "training
intensity"), at a fixed value; the phases report the measured one. OffPolicyUnit hands the
phases (these or the concurrent ones) to the one run call (common/run/runner.py).
"""
import dataclasses
import time

import numpy as np

from common.learners import optim
from common.replay import prioritized
from common.replay import replay_feed
from common.run import runner
from common.system import devices

__all__ = ('OffPolicySettings', 'linear_epsilon', 'OffPolicyPhases', 'UNIT_COLUMNS',
           'OffPolicyUnit', 'trackables')

# The columns an OffPolicyUnit adds to a metrics row, before its learner's update means.
UNIT_COLUMNS = ('env_share', 'act_share', 'learn_share', 'epsilon', 'replay_ratio',
                'replay_size')


@dataclasses.dataclass(frozen=True)
class OffPolicySettings:
    """How the phases train: minibatches per phase, warm-up, target copies, exploration and,
    for prioritized replay, the importance exponent's schedule."""
    batch_size: int
    updates_per_phase: int         # minibatch updates after each horizon x num_envs steps
    min_replay_steps: int          # steps stored before the first update
    target_period: int             # environment steps between copies into the target network
    initial_epsilon: float = 1.0
    final_epsilon: float = 0.01
    epsilon_decay_steps: int = 1_000_000
    initial_beta: float = 0.4      # prioritized replay: beta from here to 1 ...
    beta_anneal_steps: int = 0     # ... over these environment steps (0: 1 from the start)
    starts_at_terminals: bool = False  # a lost life starts an episode in replay, as a game's
                                       # reset does (the env restarts its frame stack there:
                                       # atari.stack_restarts_at_terminal)


def linear_epsilon(settings, env_steps):
    """Epsilon at initial until min_replay_steps are stored, then on the line from initial (step
    0) to final (epsilon_decay_steps), then final: the authors' code updates epsilon only once
    learning starts (astooke/accel_rl accel_rl/algos/dqn/dqn.py, optimize_policy), and the
    warm-up fills replay with uniformly random actions, as DQN's replay start does."""
    if env_steps < settings.min_replay_steps:
        return settings.initial_epsilon
    if settings.epsilon_decay_steps <= 0:
        return settings.final_epsilon
    fraction = min(env_steps / settings.epsilon_decay_steps, 1.0)
    return settings.initial_epsilon + fraction * (settings.final_epsilon -
                                                  settings.initial_epsilon)


class OffPolicyPhases:
    """iterate(env_steps) is one rollout of every simulator into replay, then up to
    updates_per_phase updates of the learner (a common.learners.q_learner.QLearner); replay is a
    ReplayMemory with one stream per simulator, or a PrioritizedReplay over one. replay_input
    picks how minibatches leave replay (common.replay.replay_feed: 'direct' or 'tf_data').
    A context manager: leaving the with block closes it.

    num_machines > 1: these phases sample one machine's share of a multi-worker run (common/
    scale/multi_worker.py): its replay holds its own simulators' steps, each update trains on
    batch_size / num_machines of them (the all-reduced gradients make the whole batch), and
    env_steps, min_replay_steps and target_period count the whole run's steps."""

    def __init__(self, sampler, learner, replay, settings, seed=0, replay_input='direct',
                 num_machines=1):
        self.sampler = sampler
        self.learner = learner
        self.replay = replay
        self.settings = settings
        self.prioritized = hasattr(replay, 'update_priorities')
        num_envs = sampler.rollout.actions.shape[1]
        memory = replay.memory if self.prioritized else replay
        if memory.num_streams != num_envs:
            raise ValueError(f'replay has {memory.num_streams} streams for {num_envs} '
                             f'simulators; it needs one per simulator')
        self.memory = memory
        self.feed = replay_feed.make_feed(
            replay_input, replay, settings.updates_per_phase, settings.batch_size // num_machines,
            device=devices.prefetch_device(getattr(learner, 'strategy', None)))
        self.rng = np.random.default_rng(seed)
        # The first step each simulator stores starts an episode (as far as replay can tell).
        self.episode_starts = np.ones(num_envs, bool)
        self.epsilon = settings.initial_epsilon
        self.learn_seconds = 0.0
        self.num_machines = num_machines
        self.local_batch_size = settings.batch_size // num_machines
        self.trained = 0   # transitions trained on here (local_batch_size per update)
        self.sampled = 0   # transitions stored

    def _policy(self, observations):
        greedy = self.learner.online_greedy(observations).numpy()
        explore = self.rng.random(len(greedy)) < self.epsilon
        random_actions = self.rng.integers(0, self.learner.num_actions, len(greedy))
        return np.where(explore, random_actions, greedy).astype(np.int32)

    def iterate(self, env_steps):
        """One phase at env_steps done so far; returns (episodes that ended, updates made)."""
        settings = self.settings
        self.epsilon = linear_epsilon(settings, env_steps)
        episodes = self.sampler.collect(self._policy)
        self._store(self.sampler.rollout)
        run_steps = self.steps_per_phase
        updates = 0
        start = time.perf_counter()
        if self.replay_ready():
            updates = self._train(env_steps)
            self.trained += updates * self.local_batch_size
        self.learn_seconds += time.perf_counter() - start
        done_steps = env_steps + run_steps
        if done_steps // settings.target_period > env_steps // settings.target_period:
            self.learner.update_target()
        return episodes, updates

    @property
    def steps_per_phase(self):
        """The run's environment steps of one phase: horizon x num_envs of every machine."""
        return self.sampler.rollout.actions.size * self.num_machines

    def replay_ready(self):
        """Whether the run's replay (every machine's alike) holds min_replay_steps steps."""
        return len(self.memory) * self.num_machines >= self.settings.min_replay_steps

    def _store(self, rollout):
        """Each simulator's steps into its stream: newest frames, actions, rewards, terminals,
        and episode starts (the step after a done, or after any terminal where the settings say
        the env restarts its stack there)."""
        ends = rollout.dones
        if self.settings.starts_at_terminals:
            ends = ends | rollout.terminals.astype(bool)
        starts = np.empty(ends.shape, bool)
        starts[0] = self.episode_starts
        starts[1:] = ends[:-1]
        self.episode_starts = ends[-1].copy()
        observations = rollout.observations[:-1]
        with self.feed.lock:
            for env in range(rollout.actions.shape[1]):
                self.replay.add_steps(env, self.memory.newest_frame(observations[:, env]),
                                      rollout.actions[:, env], rollout.rewards[:, env],
                                      rollout.terminals[:, env].astype(bool), starts[:, env])
        self.sampled += rollout.actions.size

    def _train(self, env_steps):
        settings = self.settings
        if self.prioritized:
            self.feed.beta = prioritized.annealed_beta(env_steps, settings.initial_beta,
                                                       settings.beta_anneal_steps)
            for _ in range(settings.updates_per_phase):
                batch, indices, weights = self.feed.draw()
                td_errors = self.learner.weighted_train_step(*batch, weights)
                self.feed.update_priorities(indices, td_errors.numpy())
        else:
            self.learner.train_steps(*self.feed.draw()).numpy()  # waits: 'learn' time is honest
        return settings.updates_per_phase

    def wait_for_training(self):
        """Returns once no update is under way (here, always: updates end within iterate)."""

    def close(self):
        """Ends the feed's pipeline (nothing else here holds a thread)."""
        self.feed.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def take_replay_ratio(self):
        """Transitions trained per transition stored since the last call (None if none)."""
        ratio = self.trained / self.sampled if self.sampled else None
        self.trained = self.sampled = 0
        return ratio

    def take_part_seconds(self):
        """Seconds stepping ('env'), selecting actions ('act') and learning since the last call."""
        parts = self.sampler.take_part_seconds()
        parts['learn'], self.learn_seconds = self.learn_seconds, 0.0
        return parts


class OffPolicyUnit(runner.Unit):
    """The training loop's unit of off-policy phases (OffPolicyPhases or the concurrent ones),
    which it closes when the loop ends: one sampling phase and its updates per advance(); rows
    add UNIT_COLUMNS (time shares, epsilon, the measured replay ratio, replay's size) and the
    learner's update means."""

    def __init__(self, phases):
        self.off_policy = phases
        self.learner = phases.learner

    def advance(self, env_steps):
        optim.set_schedule_steps(self.learner.optimizer, env_steps)
        episodes, updates = self.off_policy.iterate(env_steps)
        return self.off_policy.steps_per_phase, updates, episodes

    def updates(self):
        return int(self.learner.optimizer.iterations.numpy())

    def settle(self):
        self.off_policy.wait_for_training()

    def finish(self):
        """Stops the phases' trainer thread and feed before the run's last checkpoint."""
        self.off_policy.close()

    def row(self, seconds):
        extra = {f'{name}_share': value / seconds
                 for name, value in self.off_policy.take_part_seconds().items()}
        extra.update(epsilon=self.off_policy.epsilon, replay_size=len(self.off_policy.memory),
                     replay_ratio=self.off_policy.take_replay_ratio(),
                     **self.learner.update_means.take())
        return extra


def trackables(learner):
    """What a checkpoint of a Q-learner holds: both networks and the optimizer (not replay)."""
    return {'online': learner.online, 'target': learner.target, 'optimizer': learner.optimizer}
