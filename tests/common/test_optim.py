"""RMSProp against hand-computed updates for both epsilon placements, and the linear schedule."""
import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf

from common import optim


def _two_steps(**kwargs):
    variable = tf.Variable([1.0, -2.0])
    optimizer = optim.RMSProp(learning_rate=0.1, decay=0.9, epsilon=0.1, **kwargs)
    for gradient in ([2.0, 0.5], [-1.0, 1.0]):
        optimizer.apply_gradients([tf.constant(gradient)], [variable])
    return variable.numpy(), int(optimizer.iterations.numpy())


def _hand(inside, centered=False):
    value = np.array([1.0, -2.0])
    mean_square = np.zeros(2)
    mean_grad = np.zeros(2)
    for gradient in (np.array([2.0, 0.5]), np.array([-1.0, 1.0])):
        mean_square = 0.9 * mean_square + 0.1 * gradient ** 2
        mean_grad = 0.9 * mean_grad + 0.1 * gradient
        second = mean_square - mean_grad ** 2 if centered else mean_square
        denominator = np.sqrt(second + 0.1) if inside else np.sqrt(second) + 0.1
        value = value - 0.1 * gradient / denominator
    return value


@pytest.mark.parametrize('inside', [True, False])
@pytest.mark.parametrize('centered', [False, True])
def test_rmsprop_matches_hand_computation(inside, centered):
    value, iterations = _two_steps(epsilon_inside_sqrt=inside, centered=centered)
    np.testing.assert_allclose(value, _hand(inside, centered), rtol=1e-5)
    assert iterations == 2


def test_epsilon_placement_changes_the_step():
    inside, _ = _two_steps(epsilon_inside_sqrt=True)
    outside, _ = _two_steps(epsilon_inside_sqrt=False)
    assert np.abs(inside - outside).max() > 1e-2


def test_learning_rate_schedule_is_applied_per_update():
    schedule = optim.LinearSchedule(1.0, 0.0, duration=4)
    assert [float(schedule(step)) for step in (0, 2, 4, 10)] == [1.0, 0.5, 0.0, 0.0]
    variable = tf.Variable([0.0])
    optimizer = optim.RMSProp(learning_rate=schedule, decay=0.0, epsilon=0.0)
    for _ in range(5):
        optimizer.apply_gradients([tf.constant([1.0])], [variable])
    # decay 0, epsilon 0: each step moves by the scheduled rate exactly.
    np.testing.assert_allclose(variable.numpy(), [-(1.0 + 0.75 + 0.5 + 0.25 + 0.0)], rtol=1e-6)


def test_schedule_value_at_matches_the_tensor_schedule():
    schedule = optim.LinearSchedule(3e-4, 1e-5, duration=1_000)
    for step in (0, 1, 250, 999, 1_000, 5_000):
        assert schedule.value_at(step) == pytest.approx(float(schedule(step)), rel=1e-12)
    assert isinstance(schedule.value_at(10), float)


def test_schedule_rejects_bad_duration():
    with pytest.raises(ValueError, match='duration'):
        optim.LinearSchedule(1.0, 0.0, duration=0)
