"""Samplers: a policy and an environment pool fill a (T, N) rollout, the learner trains on it.

rlpyt's split of sampling from learning. Both samplers step every environment once per time step
with an action sampled from the current policy for its current observation, so they give the
same data; only the schedule differs:
- 'synchronized': one batched policy call on all N observations, then all N environments step
  (PAAC's Algorithm 1; Stooke & Abbeel's synchronized sampler, section 4.1). Over a SerialPool
  it is the serial sampler, over a ProcessPool the parallel one.
- 'alternating': the pool's two groups of environments take turns: while one group steps,
  the policy runs on the other group's observations (Stooke & Abbeel, section 4.1, Figure 1).
  It needs a ProcessPool or AleVectorPool with num_groups=2; it pays off when inference runs
  on an accelerator.

With several replicas on one machine (DistributeConfig 'mirrored'), each replica has its own
sampler groups ("we organize multiple GPUs by repeating the template", section 4.1): the pool
holds the sampler's groups for every replica, replica r's simulators form the r-th of equal
blocks of the environment axis, and the policy (a replicated act) runs each replica's block on
that replica.
"""
import time

import numpy as np

__all__ = ('SAMPLERS', 'Rollout', 'SynchronizedSampler', 'AlternatingSampler', 'make_sampler',
           'num_groups')

SAMPLERS = ('synchronized', 'alternating')


class Rollout:
    """The (horizon + 1, N, ...) observation block and the (horizon, N) action, reward, terminal and
    done arrays of one rollout, filled in place; observations[horizon] is the bootstrap state.
    terminal cuts the bootstrap; done (the game was reset after the step) can differ only with
    episodic life, and tells replay where episodes start."""

    def __init__(self, horizon, num_envs, observation_shape, observation_dtype):
        self.observations = np.zeros((horizon + 1, num_envs) + tuple(observation_shape),
                                     observation_dtype)
        self.actions = np.zeros((horizon, num_envs), np.int32)
        self.rewards = np.zeros((horizon, num_envs), np.float32)
        self.terminals = np.zeros((horizon, num_envs), np.float32)
        self.dones = np.zeros((horizon, num_envs), bool)

    @property
    def horizon(self):
        return len(self.actions)


class SynchronizedSampler:
    """Steps all environments of pool together, one batched policy call per time step."""

    def __init__(self, pool, horizon):
        self.pool = pool
        self.rollout = Rollout(horizon, pool.num_envs, pool.observation_shape,
                               pool.observation_dtype)
        self.rollout.observations[0] = pool.reset()
        self._collected = False
        self.part_seconds = {'env': 0.0, 'act': 0.0}

    def collect(self, policy):
        """Fills self.rollout with horizon steps of every environment; policy(observations) ->
        int32 actions. Returns the episodes that ended, as (score, length) pairs."""
        rollout = self.rollout
        if self._collected:  # the last observation is the first of the next rollout
            rollout.observations[0] = rollout.observations[-1]
        self._collected = True
        episodes = []
        self._fill(policy, episodes)
        return episodes

    def _fill(self, policy, episodes):
        for step in range(self.rollout.horizon):
            self._act(policy, step, slice(None))
            start = time.perf_counter()
            result = self.pool.step(self.rollout.actions[step])
            self.part_seconds['env'] += time.perf_counter() - start
            self._store(step, slice(None), result, episodes)

    def _act(self, policy, step, envs):
        start = time.perf_counter()
        self.rollout.actions[step, envs] = policy(self.rollout.observations[step, envs])
        self.part_seconds['act'] += time.perf_counter() - start

    def _store(self, step, envs, result, episodes):
        rollout = self.rollout
        rollout.rewards[step, envs] = result.rewards
        rollout.terminals[step, envs] = result.terminals
        rollout.dones[step, envs] = result.dones
        rollout.observations[step + 1, envs] = result.observations
        if result.dones.any():
            for index in np.flatnonzero(result.dones):
                episodes.append((float(result.episode_returns[index]),
                                 int(result.episode_lengths[index])))

    def take_part_seconds(self):
        """The parts of the time steps' wall time since the last call: seconds spent stepping
        ('env') and in the policy ('act')."""
        parts = self.part_seconds
        self.part_seconds = {name: 0.0 for name in parts}
        return parts


class AlternatingSampler(SynchronizedSampler):
    """Two halves of the groups of a pool alternate between stepping and acting: the even
    groups and the odd ones (with several replicas, group 2r + h is replica r's group of half h,
    so each half holds every replica's share in replica order)."""

    def __init__(self, pool, horizon):
        groups = getattr(pool, 'num_groups', 1)
        if groups < 2 or groups % 2:
            raise ValueError(f'the alternating sampler needs a ProcessPool or AleVectorPool with '
                             f'num_groups=2 (or 2 per replica), got {type(pool).__name__} with '
                             f'num_groups={groups}')
        super().__init__(pool, horizon)
        envs_per_group = pool.num_envs // groups
        self._group_envs = [slice(group * envs_per_group, (group + 1) * envs_per_group)
                            for group in range(groups)]
        self._half_groups = (range(0, groups, 2), range(1, groups, 2))
        # One group per half: a slice, no copy; else the half's groups in order.
        self._half_envs = tuple(
            self._group_envs[half[0]] if len(half) == 1 else
            np.concatenate([np.arange(pool.num_envs)[self._group_envs[group]] for group in half])
            for half in self._half_groups)

    def _fill(self, policy, episodes):
        horizon = self.rollout.horizon
        self._act_and_send(policy, 0, 0)
        for step in range(horizon):
            self._act_and_send(policy, step, 1)
            self._receive(step, 0, episodes)
            if step + 1 < horizon:
                self._act_and_send(policy, step + 1, 0)
            self._receive(step, 1, episodes)

    def _act_and_send(self, policy, step, half):
        self._act(policy, step, self._half_envs[half])
        for group in self._half_groups[half]:
            self.pool.step_async(self.rollout.actions[step, self._group_envs[group]], group)

    def _receive(self, step, half, episodes):
        for group in self._half_groups[half]:
            start = time.perf_counter()
            result = self.pool.step_wait(group)
            self.part_seconds['env'] += time.perf_counter() - start
            self._store(step, self._group_envs[group], result, episodes)


def make_sampler(kind, pool, horizon):
    """A sampler of kind 'synchronized' or 'alternating' over pool."""
    if kind not in SAMPLERS:
        raise ValueError(f'sampler={kind!r}; allowed: {SAMPLERS}')
    return (AlternatingSampler if kind == 'alternating' else SynchronizedSampler)(pool, horizon)


def num_groups(kind, num_replicas=1):
    """The pool groups a sampler of this kind needs, for num_replicas replicas sampling apart."""
    return (2 if kind == 'alternating' else 1) * num_replicas
