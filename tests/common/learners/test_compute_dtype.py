"""RunConfig.compute_dtype: torsos in bfloat16 on float32 variables, heads and outputs float32,
values close to the float32 network with the same weights; the global policy left as it was."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from common.envs import gym as gym_envs
from common.launch import config as config_lib
from common.learners import networks
from common.system import errors

SHAPE = (84, 84, 4)


def _frames(count=8, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (count,) + SHAPE, dtype=np.uint8)


def _torso_layers(model):
    return [layer for layer in model.torso.submodules
            if isinstance(layer, (keras.layers.Conv2D, keras.layers.Dense))]


def test_a_bfloat16_actor_critic_computes_its_torso_in_bfloat16_and_matches_float32():
    exact = networks.make_actor_critic(6, SHAPE, np.uint8, network='nips', seed=3)
    mixed = networks.make_actor_critic(6, SHAPE, np.uint8, network='nips', seed=3,
                                       compute_dtype='bfloat16')
    assert keras.mixed_precision.global_policy().name == 'float32'
    assert all(layer.compute_dtype == 'bfloat16' for layer in _torso_layers(mixed))
    assert all(layer.compute_dtype == 'float32' for layer in _torso_layers(exact))
    assert mixed.policy_head.compute_dtype == mixed.value_head.compute_dtype == 'float32'
    assert all(variable.dtype == tf.float32 for variable in mixed.variables)
    for mine, theirs in zip(mixed.variables, exact.variables):  # same seed, same weights
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    logits, values = mixed(_frames())
    exact_logits, exact_values = exact(_frames())
    assert logits.dtype == values.dtype == tf.float32
    assert values.shape == (8,) and logits.shape == (8, 6)
    scale = float(tf.reduce_max(tf.abs(exact_logits)))
    np.testing.assert_allclose(logits.numpy(), exact_logits.numpy(), atol=0.05 * scale)
    assert not np.array_equal(logits.numpy(), exact_logits.numpy())  # it did compute in bf16
    with tf.GradientTape() as tape:
        logits, values = mixed(_frames())
        loss = tf.reduce_sum(values) + tf.reduce_sum(logits)
    gradients = tape.gradient(loss, mixed.trainable_variables)
    assert all(gradient is not None and gradient.dtype == tf.float32 for gradient in gradients)


def test_a_bfloat16_dueling_categorical_q_network_gives_float32_values_close_to_float32():
    support = np.linspace(-10, 10, 51)
    kwargs = dict(network='nature', dueling=True, support=support, seed=1)
    exact = networks.make_q_network(4, SHAPE, np.uint8, **kwargs)
    mixed = networks.make_q_network(4, SHAPE, np.uint8, compute_dtype='bfloat16', **kwargs)
    assert mixed.value_stream.layers[-1].compute_dtype == 'float32'
    assert mixed.advantage_stream.layers[-1].compute_dtype == 'float32'
    assert mixed.value_stream.layers[0].compute_dtype == 'bfloat16'
    q_values, exact_q = mixed(_frames()), exact(_frames())
    assert q_values.dtype == tf.float32 and q_values.shape == (8, 4)
    np.testing.assert_allclose(q_values.numpy(), exact_q.numpy(), atol=0.05)


def test_a_bad_compute_dtype_is_refused_and_the_policy_is_restored():
    with pytest.raises(ValueError, match="compute_dtype='float16'; allowed"):
        networks.make_actor_critic(2, (4,), np.float32, network='mlp', compute_dtype='float16')
    with pytest.raises(ValueError, match="network='resnet'"):
        networks.make_actor_critic(2, (4,), np.float32, network='resnet',
                                   compute_dtype='bfloat16')
    assert keras.mixed_precision.global_policy().name == 'float32'
    assert config_lib.COMPUTE_DTYPES == networks.COMPUTE_DTYPES
    with pytest.raises(errors.ConfigError, match=r"RunConfig.compute_dtype='half'; allowed"):
        config_lib.RunConfig(env_config=gym_envs.GymConfig('CartPole-v1'),
                             compute_dtype='half').validate()
