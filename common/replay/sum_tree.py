"""A sum tree over item priorities, for prioritized replay (Schaul et al. 2016, section 3.3).

Each inner node holds the sum of its two children, so the root is the total priority and an item
can be found from a point of [0, total) by one walk down the tree. Setting a batch of priorities
and finding a batch of items are vectorized over the tree's levels: about log2(capacity) numpy
operations per call, whatever the batch size, never a Python loop per item. Nothing here
imports TensorFlow.
"""
import numpy as np


class SumTree:
    """Non-negative priorities of items 0..capacity-1 and the draws proportional to them."""

    def __init__(self, capacity):
        if not isinstance(capacity, (int, np.integer)) or capacity < 1:
            raise ValueError(f'SumTree capacity must be a positive integer, got {capacity!r}')
        self.capacity = int(capacity)
        # Heap layout: node 1 is the root, node i has children 2i and 2i+1, and the leaves (the
        # items, then zero padding up to a power of two) start at leaf_offset.
        self.leaf_offset = 1 << (self.capacity - 1).bit_length()
        self.depth = self.leaf_offset.bit_length() - 1
        self.nodes = np.zeros(2 * self.leaf_offset, np.float64)

    @property
    def total(self):
        """The sum of all priorities."""
        return float(self.nodes[1])

    def get(self, indices):
        """The priorities of items indices."""
        return self.nodes[self.leaf_offset + self._checked_indices(indices)]

    def set(self, indices, priorities):
        """Sets the priorities of items indices (a repeated index keeps its last priority)."""
        indices = self._checked_indices(indices)
        priorities = np.broadcast_to(np.asarray(priorities, np.float64), indices.shape)
        if not np.all(np.isfinite(priorities)) or np.any(priorities < 0):
            bad = priorities[~(np.isfinite(priorities) & (priorities >= 0))][0]
            raise ValueError(f'priorities must be finite and >= 0, got {bad!r}')
        # The last occurrence of each index wins, as a loop of single assignments would have it.
        unique, last_from_end = np.unique(indices[::-1], return_index=True)
        nodes = unique + self.leaf_offset
        self.nodes[nodes] = priorities[len(indices) - 1 - last_from_end]
        for _ in range(self.depth):
            nodes = np.unique(nodes >> 1)
            self.nodes[nodes] = self.nodes[2 * nodes] + self.nodes[2 * nodes + 1]

    def leaves(self):
        """The priorities of items 0..capacity-1 (a copy)."""
        return self.nodes[self.leaf_offset:self.leaf_offset + self.capacity].copy()

    def load(self, priorities):
        """Sets every item's priority at once and recomputes each inner node from its children,
        level by level (a saved tree is restored from its leaves alone)."""
        priorities = np.asarray(priorities, np.float64)
        if priorities.shape != (self.capacity,):
            raise ValueError(f'{priorities.shape} priorities for a SumTree of capacity '
                             f'{self.capacity}; allowed: shape ({self.capacity},)')
        if not np.all(np.isfinite(priorities)) or np.any(priorities < 0):
            bad = priorities[~(np.isfinite(priorities) & (priorities >= 0))][0]
            raise ValueError(f'priorities must be finite and >= 0, got {bad!r}')
        self.nodes[:] = 0.0
        self.nodes[self.leaf_offset:self.leaf_offset + self.capacity] = priorities
        for level in reversed(range(self.depth)):
            start = 1 << level
            self.nodes[start:2 * start] = (self.nodes[2 * start:4 * start:2] +
                                           self.nodes[2 * start + 1:4 * start:2])

    def find(self, targets):
        """The items whose intervals of the cumulative priorities hold targets (in [0, total)).

        A walk never enters a subtree whose sum is 0, so rounding at an interval's end cannot
        give an item of priority 0 (nor a padding leaf)."""
        if self.total <= 0:
            raise ValueError('no item has a positive priority to draw')
        remaining = np.array(targets, np.float64, ndmin=1)
        nodes = np.ones(remaining.shape, np.int64)
        for _ in range(self.depth):
            left = 2 * nodes
            left_sums = self.nodes[left]
            go_right = (remaining >= left_sums) & (self.nodes[left + 1] > 0)
            remaining = np.where(go_right, remaining - left_sums, remaining)
            nodes = left + go_right
        return nodes - self.leaf_offset

    def sample(self, batch_size, rng):
        """batch_size items drawn in proportion to their priorities, stratified: one uniform
        draw in each of batch_size equal segments of [0, total), as Schaul et al. (2016,
        Appendix B.2.1) sample a minibatch."""
        if batch_size < 1:
            raise ValueError(f'batch_size must be >= 1, got {batch_size!r}')
        segment = self.total / batch_size
        targets = (np.arange(batch_size) + rng.random(batch_size)) * segment
        return self.find(targets)

    def _checked_indices(self, indices):
        indices = np.array(indices, np.int64, ndmin=1)
        if indices.size and (indices.min() < 0 or indices.max() >= self.capacity):
            bad = indices[(indices < 0) | (indices >= self.capacity)][0]
            raise IndexError(f'item {bad} is outside the SumTree of capacity {self.capacity}')
        return indices
