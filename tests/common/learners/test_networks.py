"""Shapes, in-model scaling, parameter counts, name checks and tracing of the shared networks."""
import common  # noqa: F401  (selects legacy Keras before TensorFlow loads)

import numpy as np
import pytest
import tensorflow as tf

from common.learners import networks

ATARI_SHAPE = (84, 84, 4)
STOOKE_SHAPE = (104, 80, 4)
TORSO_CASES = [('nips', None), ('nature', None), ('ga3c_large', {'first_stride': 4}),
               ('ga3c_large', {'first_stride': 1})]


def pixels(shape, batch, seed=0):
    """A batch of random uint8 frames."""
    return np.random.default_rng(seed).integers(0, 256, (batch,) + shape, dtype=np.uint8)


@pytest.mark.parametrize('shape', [ATARI_SHAPE, STOOKE_SHAPE])
@pytest.mark.parametrize('network,torso_kwargs', TORSO_CASES)
def test_actor_critic_output_shapes(network, torso_kwargs, shape):
    model = networks.make_actor_critic(6, shape, np.uint8, network=network,
                                       torso_kwargs=torso_kwargs)
    logits, values = model(pixels(shape, 3))
    assert logits.shape == (3, 6) and values.shape == (3,)
    assert logits.dtype == tf.float32


@pytest.mark.parametrize('dueling', [False, True])
def test_q_network_output_shape(dueling):
    model = networks.make_q_network(4, STOOKE_SHAPE, np.uint8, network='nature', dueling=dueling)
    assert model(pixels(STOOKE_SHAPE, 2)).shape == (2, 4)


def test_dueling_q_values_average_to_the_state_value():
    model = networks.make_q_network(5, (4,), np.float32, network='mlp', dueling=True)
    observations = np.random.default_rng(1).normal(size=(3, 4)).astype(np.float32)
    state_values = model.value_stream(model.torso(observations))[:, 0]
    np.testing.assert_allclose(tf.reduce_mean(model(observations), axis=-1), state_values,
                               rtol=1e-5, atol=1e-6)


def test_dueling_streams_each_have_their_own_hidden_layer_as_wang_et_al():
    """Wang et al. (2016) Figure 1: the shared convolutions, then per stream a hidden layer of
    the torso's width (512 on nature) and its own output; the torso's own 512 layer is gone."""
    model = networks.make_q_network(4, ATARI_SHAPE, np.uint8, network='nature', dueling=True)
    assert not any(isinstance(layer, tf.keras.layers.Dense) for layer in model.torso.layers)
    value_hidden, value_out = model.value_stream.layers
    advantage_hidden, advantage_out = model.advantage_stream.layers
    assert (value_hidden.units, advantage_hidden.units) == (512, 512)
    assert (value_out.units, advantage_out.units) == (1, 4)
    assert value_hidden.kernel.shape == (3136, 512)  # 64 x 7 x 7 conv features
    plain = networks.make_q_network(4, ATARI_SHAPE, np.uint8, network='nature')
    hidden_weights = 3136 * 512 + 512
    assert model.count_params() - plain.count_params() == hidden_weights + 512 + 1


def test_the_shared_layers_get_the_streams_gradient_scaled_by_one_over_sqrt_two():
    """Wang et al. (2016) section 4.2, against the same layers composed by hand without the
    scaling: the torso's gradients are 1/sqrt(2) of those, the streams' the same."""
    model = networks.make_q_network(3, (4,), np.float32, network='mlp',
                                    torso_kwargs={'hidden_sizes': (6, 5)}, dueling=True)
    observations = np.random.default_rng(2).normal(size=(2, 4)).astype(np.float32)
    weights = tf.constant([[1.0, -2.0, 0.5], [0.3, 0.0, 1.5]])
    with tf.GradientTape(persistent=True) as tape:
        q_values = model(observations)
        features = model.torso(observations)
        advantages = model.advantage_stream(features)
        by_hand = (model.value_stream(features) + advantages
                   - tf.reduce_mean(advantages, axis=1, keepdims=True))
        loss, loss_by_hand = (tf.reduce_sum(weights * q) for q in (q_values, by_hand))
    np.testing.assert_allclose(q_values, by_hand, rtol=1e-6)
    for variable in model.torso.trainable_variables:
        np.testing.assert_allclose(tape.gradient(loss, variable),
                                   tape.gradient(loss_by_hand, variable) * 2 ** -0.5,
                                   rtol=1e-5, atol=1e-7)
    streams = model.value_stream.trainable_variables + model.advantage_stream.trainable_variables
    for variable in streams:
        np.testing.assert_allclose(tape.gradient(loss, variable),
                                   tape.gradient(loss_by_hand, variable), rtol=1e-5, atol=1e-7)


def test_dueling_refuses_a_torso_without_a_last_hidden_layer():
    torso = tf.keras.Sequential([tf.keras.layers.Flatten()], name='flat')
    with pytest.raises(ValueError, match='dueling needs a torso ending in a hidden Dense'):
        networks.QNetwork(torso, 3, dueling=True)


def test_mlp_on_float_observations_uses_them_unscaled():
    model = networks.make_actor_critic(2, (4,), np.float32, network='mlp')
    observations = np.array([[0.1, -2.0, 3.0, 0.5]], np.float32)
    logits, values = model(observations)
    features = model.torso(observations)
    np.testing.assert_allclose(logits, model.policy_head(features), rtol=1e-6)
    np.testing.assert_allclose(values, model.value_head(features)[:, 0], rtol=1e-6)


@pytest.mark.parametrize('input_scale,input_offset', [(1 / 255, 0.0), (1 / 128, -1.0)])
def test_uint8_frames_are_scaled_inside_the_model(input_scale, input_offset):
    model = networks.make_actor_critic(6, ATARI_SHAPE, np.uint8, input_scale=input_scale,
                                       input_offset=input_offset)
    frames = pixels(ATARI_SHAPE, 2)
    frames[0] = 255
    scaled = frames.astype(np.float32) * input_scale + input_offset
    # The same weights applied by hand to the float frames the model should see.
    features = model.torso(scaled)
    logits, values = model(frames)
    np.testing.assert_allclose(logits, model.policy_head(features), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(values, model.value_head(features)[:, 0], rtol=1e-4, atol=1e-5)


def test_nips_parameter_count_with_six_actions():
    model = networks.make_actor_critic(6, ATARI_SHAPE, np.uint8, network='nips')
    conv1 = 8 * 8 * 4 * 16 + 16          # 84 -> 20
    conv2 = 4 * 4 * 16 * 32 + 32         # 20 -> 9
    dense = 9 * 9 * 32 * 256 + 256
    policy = 256 * 6 + 6
    value = 256 + 1
    assert conv1 + conv2 + dense + policy + value == 677_943
    assert model.count_params() == 677_943


def test_ga3c_large_stride_one_grows_the_dense_input():
    # Stride 4: 84 -> 20 -> 9 -> 3; stride 1: 84 -> 77 -> 37 -> 17 (64 filters each).
    for stride, side in ((4, 3), (1, 17)):
        torso = networks.ga3c_large(first_stride=stride)
        torso.build((None,) + ATARI_SHAPE)
        assert torso.layers[-1].kernel.shape == (side * side * 64, 256)


def test_unknown_network_name_is_rejected():
    with pytest.raises(ValueError, match=r"network='resnet'.*'ga3c_large'.*'nips'"):
        networks.make_actor_critic(6, ATARI_SHAPE, np.uint8, network='resnet')
    with pytest.raises(ValueError, match='resnet'):
        networks.make_q_network(6, ATARI_SHAPE, np.uint8, network='resnet')


def test_bad_stride_and_bad_observation_rank_are_rejected():
    with pytest.raises(ValueError, match='first_stride=5; allowed: 1, 2, 3, 4'):
        networks.ga3c_large(first_stride=5)
    with pytest.raises(ValueError, match=r'\(H, W, C\)'):
        networks.make_actor_critic(2, (4,), np.float32, network='nips')


def test_torso_kwargs_shape_the_q_network():
    model = networks.make_q_network(3, (4,), np.float32, network='mlp',
                                    torso_kwargs={'hidden_sizes': (8,)})
    assert model.count_params() == (4 * 8 + 8) + (8 * 3 + 3)


def test_model_in_tf_function_traces_once_for_any_batch_size():
    model = networks.make_actor_critic(6, ATARI_SHAPE, np.uint8, network='nips')
    act = tf.function(lambda observations: model(observations)[0],
                      input_signature=[tf.TensorSpec((None,) + ATARI_SHAPE, tf.uint8)])
    for batch in (1, 4, 7):
        assert act(pixels(ATARI_SHAPE, batch)).shape == (batch, 6)
    assert act.experimental_get_tracing_count() == 1


def test_fan_in_uniform_draws_kernels_and_biases_within_one_over_sqrt_fan_in():
    """Torch7's default, as alfredvc/paac networks.py and NVlabs/GA3C NetworkVP.py initialize."""
    model = networks.make_actor_critic(6, ATARI_SHAPE, np.uint8, network='nips',
                                       initializer='fan_in_uniform', seed=3)
    conv1, conv2, _, dense = model.torso.layers
    fan_ins = [(conv1, 8 * 8 * 4), (conv2, 4 * 4 * 16), (dense, 9 * 9 * 32),
               (model.policy_head, 256), (model.value_head, 256)]
    for layer, fan_in in fan_ins:
        limit = 1 / np.sqrt(fan_in)
        for variable in (layer.kernel, layer.bias):
            values = variable.numpy().ravel()
            assert np.abs(values).max() <= limit and np.all(values != 0)  # biases drawn too
            if values.size >= 16:  # U(-d, d) has standard deviation d / sqrt(3)
                assert np.std(values) == pytest.approx(limit / np.sqrt(3), rel=0.25)
    again = networks.make_actor_critic(6, ATARI_SHAPE, np.uint8, network='nips',
                                       initializer='fan_in_uniform', seed=3)
    for first, second in zip(model.variables, again.variables):
        np.testing.assert_array_equal(first.numpy(), second.numpy())  # seeded


def test_glorot_default_is_seeded_with_zero_biases_and_unknown_initializers_are_named():
    model = networks.make_actor_critic(6, ATARI_SHAPE, np.uint8, network='nips', seed=4)
    assert not np.any(model.policy_head.bias.numpy())
    conv1 = model.torso.layers[0]  # 8x8x4 -> 16: fan_in 256, fan_out 1,024
    assert np.abs(conv1.kernel.numpy()).max() <= np.sqrt(6 / (256 + 1024))
    assert np.std(conv1.kernel.numpy()) == pytest.approx(np.sqrt(2 / (256 + 1024)), rel=0.1)
    again = networks.make_actor_critic(6, ATARI_SHAPE, np.uint8, network='nips', seed=4)
    other = networks.make_actor_critic(6, ATARI_SHAPE, np.uint8, network='nips', seed=5)
    np.testing.assert_array_equal(again.torso.layers[0].kernel.numpy(), conv1.kernel.numpy())
    assert np.any(other.torso.layers[0].kernel.numpy() != conv1.kernel.numpy())
    with pytest.raises(ValueError, match="'he_normal'"):
        networks.make_actor_critic(6, ATARI_SHAPE, np.uint8, initializer='he_normal')


def test_same_padding_keeps_the_borders_as_ga3c_code_does():
    """NetworkVP.py pads its convolutions: 84 -> 21 -> 11, so the dense layer sees 11*11*32."""
    same = networks.make_actor_critic(6, ATARI_SHAPE, np.uint8, network='nips',
                                      torso_kwargs={'padding': 'same'})
    valid = networks.make_actor_critic(6, ATARI_SHAPE, np.uint8, network='nips')
    assert same.torso.layers[-1].kernel.shape == (11 * 11 * 32, 256)
    assert valid.torso.layers[-1].kernel.shape == (9 * 9 * 32, 256)
    logits, values = same(pixels(ATARI_SHAPE, 2))
    assert logits.shape == (2, 6) and values.shape == (2,)
    with pytest.raises(ValueError, match="'full'"):
        networks.make_actor_critic(6, ATARI_SHAPE, np.uint8, torso_kwargs={'padding': 'full'})


@pytest.mark.parametrize('network, channels, hidden', [('a3c_net', 32, 256), ('dqn_net', 64, 512)])
def test_stooke_networks_end_in_12_by_9_convolution_outputs(network, channels, hidden):
    """Appendix A.1 of Stooke & Abbeel: on 104x80 frames the padded convolutions end at 12x9."""
    torso = networks.make_torso(network, STOOKE_SHAPE)
    torso.build((None,) + STOOKE_SHAPE)
    convolution_outputs = [layer.output_shape for layer in torso.layers
                           if isinstance(layer, tf.keras.layers.Conv2D)]
    assert convolution_outputs[-1] == (None, 12, 9, channels)
    assert torso.layers[-1].output_shape == (None, hidden)
    model = networks.make_actor_critic(6, STOOKE_SHAPE, np.uint8, network=network)
    logits, values = model(pixels(STOOKE_SHAPE, 2))
    assert logits.shape == (2, 6) and values.shape == (2,)


def test_stooke_networks_refuse_a_padding_argument():
    with pytest.raises(ValueError, match="network='a3c_net' takes no padding="):
        networks.make_torso('a3c_net', STOOKE_SHAPE, {'padding': 'same'})
