"""Proportional prioritized sampling of replay items (Schaul et al. 2016, "Prioritized Experience
Replay", sections 3.3-3.4 and Algorithm 1), on a SumTree.

An item's priority is p = |TD error| + priority_epsilon; it is drawn with probability
p^alpha / sum_k p_k^alpha; a new item enters at the largest p seen so far, so it is drawn at
least once soon; the importance weights (N P(i))^-beta are divided by the minibatch's largest,
as rlpyt's PrioritizedReplay and Dopamine normalize them, so N cancels. Nothing here imports
TensorFlow.
"""
import numpy as np

from common.replay import sum_tree


class PrioritizedSampling:
    """Which of capacity replay items a minibatch takes, and the weight of each in the loss."""

    def __init__(self, capacity, alpha, priority_epsilon=1e-6, seed=0):
        if not alpha >= 0:
            raise ValueError(f'priority exponent alpha must be >= 0, got {alpha!r}')
        if not priority_epsilon > 0:
            raise ValueError(f'priority_epsilon must be > 0, got {priority_epsilon!r}')
        self.tree = sum_tree.SumTree(capacity)
        self.alpha = alpha
        self.priority_epsilon = priority_epsilon
        self.max_priority = 1.0  # Algorithm 1 starts p_1 = 1
        self.rng = np.random.default_rng(seed)

    @property
    def capacity(self):
        return self.tree.capacity

    def add(self, indices):
        """Items (new or overwritten) that can now be drawn, at the largest priority so far."""
        self.tree.set(indices, self.max_priority ** self.alpha)

    def remove(self, indices):
        """Items that must not be drawn (e.g. a transition whose next steps are not stored yet)."""
        self.tree.set(indices, 0.0)

    def sample(self, batch_size, beta):
        """(indices, weights) of a stratified minibatch: weights (float32) are the importance
        weights (N P(i))^-beta over the minibatch's largest, so the largest is 1."""
        if not 0 <= beta <= 1:
            raise ValueError(f'importance exponent beta must be in [0, 1], got {beta!r}')
        indices = self.tree.sample(batch_size, self.rng)
        probabilities = self.tree.get(indices) / self.tree.total
        weights = (probabilities.min() / probabilities) ** beta
        return indices, weights.astype(np.float32)

    def update(self, indices, td_errors):
        """New priorities |td_errors| + priority_epsilon of the items a minibatch took. An item
        removed since the draw (overwritten while its minibatch trained: a prefetched draw, or
        a trainer thread beside the sampler) stays removed."""
        indices = np.asarray(indices)
        priorities = np.abs(np.asarray(td_errors, np.float64)) + self.priority_epsilon
        if not np.all(np.isfinite(priorities)):
            raise ValueError('TD errors must be finite to become priorities')
        held = self.tree.get(indices) > 0
        if not held.any():
            return
        priorities = priorities[held]
        self.max_priority = max(self.max_priority, float(priorities.max()))
        self.tree.set(indices[held], priorities ** self.alpha)


def annealed_beta(step, initial_beta, anneal_steps):
    """beta linearly from initial_beta at step 0 to 1 at anneal_steps, then 1 (section 3.4)."""
    if anneal_steps <= 0:
        return 1.0
    return initial_beta + (1.0 - initial_beta) * min(step / anneal_steps, 1.0)
