"""RMSProp against hand-computed updates for both epsilon placements, the linear schedule and
the KL-adaptive learning rate."""
import collections
import re
import sys

import gin
import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf

from common.launch import app
from common.launch import config as config_lib
from common.learners import optim
from common.system import errors


def _two_steps(**kwargs):
    variable = tf.Variable([1.0, -2.0])
    optimizer = optim.RMSProp(learning_rate=0.1, decay=0.9, epsilon=0.1, **kwargs)
    for gradient in ([2.0, 0.5], [-1.0, 1.0]):
        optimizer.apply_gradients([tf.constant(gradient)], [variable])
    return variable.numpy(), int(optimizer.iterations.numpy())


def _hand(inside, centered=False, initial_mean_square=0.0):
    value = np.array([1.0, -2.0])
    mean_square = np.full(2, initial_mean_square)
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
@pytest.mark.parametrize('initial_mean_square', [0.0, 1.0])
def test_rmsprop_matches_hand_computation(inside, centered, initial_mean_square):
    value, iterations = _two_steps(epsilon_inside_sqrt=inside, centered=centered,
                                   initial_mean_square=initial_mean_square)
    np.testing.assert_allclose(value, _hand(inside, centered, initial_mean_square), rtol=1e-5)
    assert iterations == 2


def test_rmsprop_refuses_a_negative_initial_mean_square():
    with pytest.raises(ValueError, match='initial_mean_square=-1.0'):
        optim.RMSProp(learning_rate=0.1, initial_mean_square=-1.0)


def test_epsilon_placement_changes_the_step():
    inside, _ = _two_steps(epsilon_inside_sqrt=True, initial_mean_square=0.0)
    outside, _ = _two_steps(epsilon_inside_sqrt=False, initial_mean_square=0.0)
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


def test_set_schedule_steps_keeps_no_tensor_per_value():
    """The Q-value family sets its schedule's env steps before every update: no cached tensor
    per Python int (common/run/scalars.py)."""
    schedule = optim.EnvStepSchedule(optim.LinearSchedule(1.0, 0.0, duration=10_000))
    optimizer = optim.RMSProp(learning_rate=schedule)
    for steps in range(200):  # the first calls allocate once
        optim.set_schedule_steps(optimizer, steps)
    blocks_before = sys.getallocatedblocks()
    for steps in range(1_000, 6_000):
        optim.set_schedule_steps(optimizer, steps)
    grown = sys.getallocatedblocks() - blocks_before
    assert grown < 1_000, grown  # a cached tensor per value: 5,000 blocks and more
    assert int(schedule.env_steps.numpy()) == 5_999 and float(schedule(0)) == pytest.approx(0.4001)


def test_schedule_value_at_matches_the_tensor_schedule():
    schedule = optim.LinearSchedule(3e-4, 1e-5, duration=1_000)
    for step in (0, 1, 250, 999, 1_000, 5_000):
        assert schedule.value_at(step) == pytest.approx(float(schedule(step)), rel=1e-12)
    assert isinstance(schedule.value_at(10), float)


def test_schedule_rejects_bad_duration():
    with pytest.raises(ValueError, match='duration'):
        optim.LinearSchedule(1.0, 0.0, duration=0)


def test_actor_critic_update_clips_by_global_norm_and_reports_the_norm_before():
    loss = collections.namedtuple('Loss', 'total policy_loss value_loss entropy')(
        *(tf.constant(value) for value in (1.0, 2.0, 3.0, 4.0)))
    gradients = [tf.constant([3.0, 0.0]), tf.constant([4.0])]  # global norm 5

    def run(clip_norm):
        variables = [tf.Variable([1.0, 1.0]), tf.Variable([1.0])]
        optimizer = optim.RMSProp(learning_rate=0.5, decay=0.9, epsilon=0.1)
        stats = optim.apply_actor_critic_gradients(optimizer, gradients, variables, loss,
                                                   clip_norm)
        return [variable.numpy() for variable in variables], stats

    clipped, stats = run(clip_norm=2.5)
    assert float(stats['grad_norm']) == pytest.approx(5.0)
    assert float(stats['learning_rate']) == pytest.approx(0.5)
    assert [float(stats[name]) for name in ('loss', 'policy_loss', 'value_loss', 'entropy')] == [
        1.0, 2.0, 3.0, 4.0]
    # By hand: gradients halved, then one TF1 RMSProp step from mean squares of ones.
    for variable, gradient in zip(clipped, gradients):
        half = gradient.numpy() / 2
        np.testing.assert_allclose(
            variable, 1.0 - 0.5 * half / np.sqrt(0.9 + 0.1 * half ** 2 + 0.1), rtol=1e-5)
    unclipped, _ = run(clip_norm=0.0)
    for variable, gradient in zip(unclipped, gradients):
        full = gradient.numpy()
        np.testing.assert_allclose(
            variable, 1.0 - 0.5 * full / np.sqrt(0.9 + 0.1 * full ** 2 + 0.1), rtol=1e-5)


def test_rmsprop_is_not_a_gin_configurable_any_more():
    """Its settings live in each paper's config; a leftover binding is refused by name."""
    gin.clear_config()
    try:
        with pytest.raises(errors.ConfigError,
                           match=r'RMSProp.epsilon \(--gin_bindings=.*\) is not '
                                 r'a binding: bind XConfig.rmsprop_epsilon'):
            app.parse_gin([], ['RMSProp.epsilon = 0.5'],
                          renamed=config_lib.renamed_bindings('XConfig'))
        with pytest.raises(errors.ConfigError, match='RMSProp'):
            app.parse_gin([], ['RMSProp.momentum = 0.5'])  # gin itself knows no RMSProp
    finally:
        gin.clear_config()


def test_adam_matches_hand_computation_and_keras():
    """Kingma & Ba's update written out in numpy, and tf.keras' Adam (same epsilon placement)."""
    gradients = [np.array([2.0, 0.5]), np.array([-1.0, 1.0]), np.array([0.3, -0.2])]
    variable = tf.Variable([1.0, -2.0])
    optimizer = optim.Adam(learning_rate=0.1, beta1=0.8, beta2=0.9, epsilon=0.01)
    keras_variable = tf.Variable([1.0, -2.0])
    keras_adam = tf.keras.optimizers.Adam(learning_rate=0.1, beta_1=0.8, beta_2=0.9,
                                          epsilon=0.01)
    value, first, second = np.array([1.0, -2.0]), np.zeros(2), np.zeros(2)
    for step, gradient in enumerate(gradients, start=1):
        optimizer.apply_gradients([tf.constant(gradient, tf.float32)], [variable])
        keras_adam.apply_gradients([(tf.constant(gradient, tf.float32), keras_variable)])
        first = 0.8 * first + 0.2 * gradient
        second = 0.9 * second + 0.1 * gradient ** 2
        rate = 0.1 * np.sqrt(1 - 0.9 ** step) / (1 - 0.8 ** step)
        value = value - rate * first / (np.sqrt(second) + 0.01)
    np.testing.assert_allclose(variable.numpy(), value, rtol=1e-5)
    np.testing.assert_allclose(variable.numpy(), keras_variable.numpy(), rtol=1e-5)
    assert int(optimizer.iterations.numpy()) == 3


def test_adam_follows_a_learning_rate_schedule():
    variable = tf.Variable([0.0])
    optimizer = optim.Adam(learning_rate=optim.LinearSchedule(0.1, 0.0, 4))
    rates = []
    for _ in range(4):
        rates.append(float(optimizer.current_learning_rate()))
        optimizer.apply_gradients([tf.constant([1.0])], [variable])
    np.testing.assert_allclose(rates, [0.1, 0.075, 0.05, 0.025], rtol=1e-6)


def test_kl_adaptive_rate_follows_rl_games_rule_within_its_bounds():
    """Above 2 x target: / 1.5; below target / 2: x 1.5; in between: kept; never past the
    bounds (rl_games' AdaptiveScheduler)."""
    rate = optim.KLAdaptiveRate(1e-3, kl_target=0.01, minimum=5e-4, maximum=2e-3)
    expected = 1e-3
    for kl, factor in ((0.03, 1 / 1.5), (0.02, 1.0), (0.005, 1.0), (0.004, 1.5), (0.0, 1.5),
                       (0.0, 1.5), (0.5, 1 / 1.5), (0.5, 1 / 1.5), (0.5, 1 / 1.5), (0.5, 1 / 1.5)):
        expected = min(max(expected * factor, 5e-4), 2e-3)
        rate.adapt(tf.constant(kl))
        assert float(rate(tf.constant(7, tf.int64))) == pytest.approx(expected, rel=1e-6), kl
    assert float(rate.rate.numpy()) == pytest.approx(5e-4)


def test_kl_adaptive_rate_drives_the_optimizer_and_is_checkpointed(tmp_path):
    variable = tf.Variable([1.0])
    optimizer = optim.Adam(optim.KLAdaptiveRate(1e-3, kl_target=0.01))
    optimizer.learning_rate.adapt(0.1)
    assert float(optimizer.current_learning_rate()) == pytest.approx(1e-3 / 1.5)
    before = float(variable.numpy()[0])
    optimizer.apply_gradients([tf.constant([1.0])], [variable])
    # Adam's first step moves by the learning rate (m / sqrt(v) = 1).
    assert before - float(variable.numpy()[0]) == pytest.approx(1e-3 / 1.5, rel=1e-3)
    path = tf.train.Checkpoint(optimizer=optimizer).save(str(tmp_path / 'ckpt'))
    restored = optim.Adam(optim.KLAdaptiveRate(1e-3, kl_target=0.01))
    tf.train.Checkpoint(optimizer=restored).restore(path).expect_partial()
    assert float(restored.current_learning_rate()) == pytest.approx(1e-3 / 1.5)


@pytest.mark.parametrize('kwargs, named', [
    (dict(initial=1e-3, kl_target=0.0), 'kl_target=0.0; must be > 0'),
    (dict(initial=0.5, kl_target=0.01), 'initial=0.5; must be in [minimum=1e-06, maximum=0.01]'),
])
def test_kl_adaptive_rate_refuses_bad_values(kwargs, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        optim.KLAdaptiveRate(**kwargs)
