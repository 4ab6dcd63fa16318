"""Proportional prioritized sampling: priorities from TD errors, new items at the running
maximum, importance weights by hand, beta annealing, and its errors."""
import numpy as np
import pytest

from common.replay import prioritized


def _frequencies(sampling, draws=400, batch_size=64, beta=0.4):
    indices = np.concatenate([sampling.sample(batch_size, beta)[0] for _ in range(draws)])
    return np.bincount(indices, minlength=sampling.capacity) / len(indices)


def test_items_are_drawn_in_proportion_to_priority_to_the_alpha():
    sampling = prioritized.PrioritizedSampling(4, alpha=0.5, priority_epsilon=0.01, seed=0)
    sampling.add(np.arange(4))
    sampling.update(np.arange(4), td_errors=[-0.99, 3.99, 0.0, 8.99])
    expected = np.sqrt([1.0, 4.0, 0.01, 9.0])  # (|delta| + 0.01) ** 0.5
    np.testing.assert_allclose(sampling.tree.get(np.arange(4)), expected)
    np.testing.assert_allclose(_frequencies(sampling), expected / expected.sum(), atol=0.01)


def test_alpha_zero_draws_uniformly_whatever_the_errors():
    sampling = prioritized.PrioritizedSampling(4, alpha=0.0, seed=0)
    sampling.add(np.arange(4))
    sampling.update(np.arange(4), td_errors=[0.1, 10.0, 100.0, 0.0])
    np.testing.assert_allclose(_frequencies(sampling), 0.25, atol=0.01)


def test_new_items_enter_at_the_largest_priority_seen_so_far():
    sampling = prioritized.PrioritizedSampling(6, alpha=0.6, priority_epsilon=1e-6, seed=0)
    sampling.add([0, 1])
    assert sampling.tree.get([0, 1]) == pytest.approx([1.0, 1.0])  # Algorithm 1: p_1 = 1
    sampling.update([0, 1], td_errors=[2.5, 0.2])
    sampling.add([2])
    assert sampling.max_priority == pytest.approx(2.5 + 1e-6)
    assert sampling.tree.get([2])[0] == pytest.approx((2.5 + 1e-6) ** 0.6)
    sampling.update([0], td_errors=[0.0])  # the maximum is of every priority seen, not current
    sampling.add([3])
    assert sampling.tree.get([3])[0] == pytest.approx((2.5 + 1e-6) ** 0.6)


def test_removed_items_are_never_drawn():
    sampling = prioritized.PrioritizedSampling(5, alpha=1.0, seed=0)
    sampling.add(np.arange(5))
    sampling.remove([1, 3])
    frequencies = _frequencies(sampling, draws=100)
    assert frequencies[1] == 0 and frequencies[3] == 0
    np.testing.assert_allclose(frequencies[[0, 2, 4]], 1 / 3, atol=0.02)


def test_an_item_removed_after_its_draw_stays_removed_when_its_error_comes_back():
    """A prefetched minibatch or a trainer thread returns TD errors after a write overwrote
    some of its items: those keep priority 0 (never drawn), the others take their errors."""
    sampling = prioritized.PrioritizedSampling(4, alpha=1.0, priority_epsilon=0.5, seed=0)
    sampling.add(np.arange(4))
    sampling.remove([1])
    sampling.update([0, 1, 2], td_errors=[1.5, 9.5, 2.5])
    np.testing.assert_allclose(sampling.tree.get(np.arange(4)), [2.0, 0.0, 3.0, 1.0])
    assert sampling.max_priority == pytest.approx(3.0)  # not the removed item's 10
    assert _frequencies(sampling, draws=50)[1] == 0
    sampling.update([1], td_errors=[4.0])  # every item of the batch gone: nothing changes
    assert sampling.tree.get([1])[0] == 0 and sampling.max_priority == pytest.approx(3.0)


def test_importance_weights_are_the_hand_computed_ones_over_the_largest():
    sampling = prioritized.PrioritizedSampling(3, alpha=1.0, priority_epsilon=1e-9, seed=0)
    sampling.add(np.arange(3))
    sampling.update(np.arange(3), td_errors=[1.0, 2.0, 5.0])
    indices, weights = sampling.sample(30, beta=0.5)
    probabilities = np.array([1.0, 2.0, 5.0])[indices] / 8.0
    by_hand = (3 * probabilities) ** -0.5  # (N P(i)) ** -beta
    np.testing.assert_allclose(weights, by_hand / by_hand.max(), rtol=1e-6)
    assert weights.dtype == np.float32 and weights.max() == pytest.approx(1.0)
    _, unweighted = sampling.sample(30, beta=0.0)
    np.testing.assert_array_equal(unweighted, 1.0)


def test_beta_anneals_linearly_to_one_and_stays():
    assert prioritized.annealed_beta(0, 0.4, 1000) == pytest.approx(0.4)
    assert prioritized.annealed_beta(500, 0.4, 1000) == pytest.approx(0.7)
    assert prioritized.annealed_beta(1000, 0.4, 1000) == pytest.approx(1.0)
    assert prioritized.annealed_beta(5000, 0.4, 1000) == pytest.approx(1.0)
    assert prioritized.annealed_beta(0, 0.4, 0) == 1.0


@pytest.mark.parametrize('call, message', [
    (lambda: prioritized.PrioritizedSampling(4, alpha=-0.1), 'alpha must be >= 0, got -0.1'),
    (lambda: prioritized.PrioritizedSampling(4, alpha=0.6, priority_epsilon=0.0),
     'priority_epsilon must be > 0, got 0.0'),
    (lambda: _ready().sample(8, beta=1.5), 'beta must be in \\[0, 1\\], got 1.5'),
    (lambda: _ready().update([0], [np.inf]), 'TD errors must be finite'),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def _ready():
    sampling = prioritized.PrioritizedSampling(4, alpha=0.6)
    sampling.add(np.arange(4))
    return sampling
