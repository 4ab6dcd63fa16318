"""SumTree: partial sums after batched sets, finds against a cumulative-sum search, draws in
proportion to the priorities, and its errors."""
import numpy as np
import pytest

from common.replay import sum_tree


def _searchsorted_oracle(priorities, targets):
    """The item whose interval [cumsum_{i-1}, cumsum_i) holds each target, by hand."""
    return np.searchsorted(np.cumsum(priorities), targets, side='right')


@pytest.mark.parametrize('capacity', [1, 2, 5, 8, 1000])
def test_every_inner_node_is_the_sum_of_its_children_after_batched_sets(capacity):
    rng = np.random.default_rng(capacity)
    tree = sum_tree.SumTree(capacity)
    priorities = np.zeros(capacity)
    for _ in range(20):
        indices = rng.integers(0, capacity, size=rng.integers(1, 2 * capacity + 1))
        values = rng.random(len(indices))
        tree.set(indices, values)
        for index, value in zip(indices, values):  # one at a time: the last write wins
            priorities[index] = value
    np.testing.assert_allclose(tree.get(np.arange(capacity)), priorities)
    assert tree.total == pytest.approx(priorities.sum())
    inner = np.arange(1, tree.leaf_offset)
    np.testing.assert_allclose(tree.nodes[inner], tree.nodes[2 * inner] + tree.nodes[2 * inner + 1])


def test_find_agrees_with_a_search_of_the_cumulative_sums():
    rng = np.random.default_rng(0)
    capacity = 37  # not a power of two: padding leaves must never be found
    priorities = rng.random(capacity)
    priorities[[0, 5, 6, 36]] = 0.0  # items of priority 0 must never be found either
    tree = sum_tree.SumTree(capacity)
    tree.set(np.arange(capacity), priorities)
    targets = rng.random(10000) * priorities.sum()
    np.testing.assert_array_equal(tree.find(targets), _searchsorted_oracle(priorities, targets))


def test_targets_at_the_very_end_never_give_an_item_of_priority_zero():
    tree = sum_tree.SumTree(6)
    tree.set([0, 1, 2, 3, 4, 5], [0.1, 0.2, 0.3, 0.0, 0.0, 0.0])
    # The total and beyond it (what rounding can give at the end of the last interval).
    found = tree.find([tree.total, np.nextafter(tree.total, 1.0), tree.total * (1 + 1e-12)])
    np.testing.assert_array_equal(found, [2, 2, 2])


def test_stratified_draws_follow_the_priorities():
    priorities = np.array([1.0, 2.0, 0.0, 4.0, 8.0, 0.5, 0.5])
    tree = sum_tree.SumTree(len(priorities))
    tree.set(np.arange(len(priorities)), priorities)
    rng = np.random.default_rng(1)
    draws = np.concatenate([tree.sample(32, rng) for _ in range(2000)])
    counts = np.bincount(draws, minlength=len(priorities))
    expected = len(draws) * priorities / priorities.sum()
    assert counts[2] == 0
    positive = expected > 0
    # Stratified draws vary less than independent ones: the multinomial chi-square bound holds.
    chi_square = (((counts - expected)[positive] ** 2) / expected[positive]).sum()
    assert chi_square < 22.5  # chi-square, 5 degrees of freedom, p = 0.9996


def test_setting_a_priority_changes_how_often_the_item_is_drawn():
    tree = sum_tree.SumTree(4)
    tree.set(np.arange(4), 1.0)
    rng = np.random.default_rng(2)
    before = np.bincount(np.concatenate([tree.sample(64, rng) for _ in range(200)]), minlength=4)
    tree.set([3], 9.0)
    after = np.bincount(np.concatenate([tree.sample(64, rng) for _ in range(200)]), minlength=4)
    assert before[3] / before.sum() == pytest.approx(0.25, abs=0.02)
    assert after[3] / after.sum() == pytest.approx(0.75, abs=0.02)


@pytest.mark.parametrize('build, message', [
    (lambda: sum_tree.SumTree(0), 'capacity must be a positive integer, got 0'),
    (lambda: sum_tree.SumTree(4).set([1], [-0.5]), 'must be finite and >= 0, got -0.5'),
    (lambda: sum_tree.SumTree(4).set([1], [np.nan]), 'must be finite and >= 0, got nan'),
    (lambda: sum_tree.SumTree(4).set([4], [1.0]), 'item 4 is outside the SumTree of capacity 4'),
    (lambda: sum_tree.SumTree(4).find([0.0]), 'no item has a positive priority'),
])
def test_bad_input_is_named(build, message):
    with pytest.raises((ValueError, IndexError), match=message):
        build()
