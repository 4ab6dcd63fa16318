"""Multi-step asynchronous Adam (Appendix B): with one learner synchronizing after every step it
is ordinary Adam; with n local steps it is the appendix's rule computed by hand."""
import numpy as np
import pytest

from accel_tf import async_adam
from common.units.parameter_store import ParameterStore

SIZE = 7
RATE, BETA1, BETA2, EPSILON = 0.01, 0.9, 0.999, 1e-8


@pytest.fixture
def store():
    store = ParameterStore.create(SIZE, slots=async_adam.SLOTS, num_chunks=3)
    store.parameters[:] = np.linspace(-1, 1, SIZE)
    yield store
    store.close()


def _gradients(count, seed=0):
    return np.random.default_rng(seed).normal(size=(count, SIZE))


def test_one_learner_one_local_step_is_ordinary_adam(store):
    optimizer = async_adam.AsyncAdam(store, RATE, BETA1, BETA2, EPSILON)
    theta = np.linspace(-1, 1, SIZE).astype(np.float64)
    first, second = np.zeros(SIZE), np.zeros(SIZE)
    for step, gradient in enumerate(_gradients(300), start=1):
        optimizer.local_step(gradient)
        assert optimizer.synchronize() == step
        first = BETA1 * first + (1 - BETA1) * gradient
        second = BETA2 * second + (1 - BETA2) * gradient ** 2
        rate = RATE * np.sqrt(1 - BETA2 ** step) / (1 - BETA1 ** step)
        theta = theta - rate * first / (np.sqrt(second) + EPSILON)
    np.testing.assert_allclose(store.pull(), theta, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(optimizer.parameters, theta, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(store.slots['first_moment'], first, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(store.slots['second_moment'], second, rtol=1e-4, atol=1e-7)


def test_n_local_steps_then_one_synchronization_follow_appendix_b(store):
    store.slots['first_moment'][:] = 0.5
    store.slots['second_moment'][:] = 0.25
    central = store.pull().astype(np.float64)
    optimizer = async_adam.AsyncAdam(store, RATE, BETA1, BETA2, EPSILON)
    gradients = _gradients(3, seed=1)
    theta, first, second = central.copy(), np.full(SIZE, 0.5), np.full(SIZE, 0.25)
    step_sum = np.zeros(SIZE)
    for step, gradient in enumerate(gradients, start=1):
        optimizer.local_step(gradient)
        first = BETA1 * first + (1 - BETA1) * gradient
        second = BETA2 * second + (1 - BETA2) * gradient ** 2
        rate = RATE * np.sqrt(1 - BETA2 ** step) / (1 - BETA1 ** step)
        step_sum += rate * first / (np.sqrt(second) + EPSILON)
    np.testing.assert_allclose(store.pull(), central)  # nothing central moved yet
    assert optimizer.synchronize() == 1
    g1, g2, g3 = gradients
    expected_first = BETA1 ** 3 * 0.5 + (1 - BETA1) * (BETA1 ** 2 * g1 + BETA1 * g2 + g3)
    expected_second = BETA2 ** 3 * 0.25 + (1 - BETA2) * (
        BETA2 ** 2 * g1 ** 2 + BETA2 * g2 ** 2 + g3 ** 2)
    np.testing.assert_allclose(store.pull(), central - step_sum, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(store.slots['first_moment'], expected_first, rtol=1e-5)
    np.testing.assert_allclose(store.slots['second_moment'], expected_second, rtol=1e-5)
    # The learner continues from the central values, its accumulators empty.
    np.testing.assert_allclose(optimizer.parameters, store.pull())
    np.testing.assert_allclose(optimizer.first_moment, store.slots['first_moment'])
    assert not optimizer.step_sum.any() and optimizer.local_steps == 0


def test_two_learners_both_land_in_the_central_store(store):
    first = async_adam.AsyncAdam(store, RATE, BETA1, BETA2, EPSILON)
    second = async_adam.AsyncAdam(store, RATE, BETA1, BETA2, EPSILON)
    start = store.pull().copy()
    first.local_step(np.ones(SIZE))
    second.local_step(np.ones(SIZE))
    first.synchronize()
    assert second.synchronize() == 2
    # Each first Adam step with a gradient of ones moves every parameter by about RATE.
    np.testing.assert_allclose(store.pull(), start - 2 * RATE, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('local_steps_per_sync', [1, 2])
def test_a_learner_on_a_resumed_store_goes_on_with_its_bias_correction(store,
                                                                       local_steps_per_sync):
    """A store restored at 500 central updates has taken in 500 x n gradient steps: the next
    local steps are steps 500 n + 1, 500 n + 2, ... of Adam, not 1, 2, ... again."""
    n = local_steps_per_sync
    store.set_updates(500)
    store.slots['first_moment'][:] = 0.05
    store.slots['second_moment'][:] = 0.01
    central = store.pull().astype(np.float64)
    optimizer = async_adam.AsyncAdam(store, RATE, BETA1, BETA2, EPSILON,
                                     local_steps_per_sync=n)
    theta, first, second = central.copy(), np.full(SIZE, 0.05), np.full(SIZE, 0.01)
    for round_index, gradients in enumerate(np.split(_gradients(2 * n, seed=2), 2)):
        for local, gradient in enumerate(gradients, start=1):
            optimizer.local_step(gradient)
            first = BETA1 * first + (1 - BETA1) * gradient
            second = BETA2 * second + (1 - BETA2) * gradient ** 2
            step = (500 + round_index) * n + local
            rate = RATE * np.sqrt(1 - BETA2 ** step) / (1 - BETA1 ** step)
            theta = theta - rate * first / (np.sqrt(second) + EPSILON)
        assert optimizer.synchronize() == 501 + round_index
    np.testing.assert_allclose(store.pull(), theta, rtol=1e-5, atol=1e-6)
