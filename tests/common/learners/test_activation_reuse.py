"""The torso's backward pass from kept activations gives autodiff's gradients (TensorFlow's own
GradientTape as the oracle) for every torso of common/learners/networks.py, and anything it
does not hold is refused by name."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras as keras

from common.learners import activation_reuse
from common.learners import networks

TORSO_CASES = [  # (network, torso_kwargs, observation shape); small frames keep it quick
    ('nips', None, (44, 36, 4)),
    ('nips', {'padding': 'same'}, (44, 36, 4)),
    ('nature', None, (52, 52, 4)),
    ('ga3c_large', {'first_stride': 2}, (40, 40, 4)),
    ('a3c_net', None, (104, 80, 4)),
    ('dqn_net', None, (104, 80, 4)),
    ('mlp', None, (4,)),
]


def _model(network, torso_kwargs, shape, compute_dtype='float32'):
    dtype = np.uint8 if len(shape) == 3 else np.float32
    return networks.make_actor_critic(5, shape, dtype, network=network,
                                      torso_kwargs=torso_kwargs, seed=3,
                                      compute_dtype=compute_dtype), dtype


def _observations(shape, dtype, rows=6):
    generator = np.random.default_rng(0)
    if dtype == np.uint8:
        return tf.constant(generator.integers(0, 256, (rows,) + shape, dtype=np.uint8))
    return tf.constant(generator.normal(size=(rows,) + shape).astype(np.float32))


def _objective(logits, values):
    """Something that depends on every output, with unequal weights per row."""
    weights = tf.range(1.0, tf.cast(tf.shape(values)[0], tf.float32) + 1.0)
    return (tf.reduce_sum(tf.nn.log_softmax(logits)[:, 1] * weights)
            + tf.reduce_sum(tf.square(values - 0.3)))


# How close to autodiff's each gradient must be, relative to its largest element: the same ops in
# both (a wrong formula is off by far more), float rounding apart.
TOLERANCES = {'float32': 2e-5, 'bfloat16': 2e-5}


@pytest.mark.parametrize('compute_dtype', sorted(TOLERANCES))
@pytest.mark.parametrize('network, torso_kwargs, shape', TORSO_CASES)
def test_torso_gradients_from_kept_outputs_equal_autodiffs(network, torso_kwargs, shape,
                                                           compute_dtype):
    model, dtype = _model(network, torso_kwargs, shape, compute_dtype)
    observations = _observations(shape, dtype)
    with tf.GradientTape() as tape:
        logits, values = model(observations)
        expected_objective = _objective(logits, values)
    expected = tape.gradient(expected_objective, model.trainable_variables)

    inputs = model.scaled(observations)
    kept = activation_reuse.stored_outputs(model.torso,
                                           activation_reuse.run_layers(model.torso, inputs))
    # Kept outputs are constants to the update, as a rollout's are.
    kept = [tf.constant(output.numpy()) for output in kept]
    outputs = activation_reuse.layer_outputs(model.torso, inputs, kept)
    features = outputs[-1]
    heads = model.policy_head.trainable_variables + model.value_head.trainable_variables
    with tf.GradientTape() as tape:
        tape.watch(features)
        objective = _objective(model.policy_head(features),
                               tf.squeeze(model.value_head(features), -1))
    head_gradients, features_gradient = tape.gradient(objective, [heads, features])
    found = activation_reuse.torso_gradients(model.torso, inputs, outputs, features_gradient)
    found.update({variable.ref(): gradient for variable, gradient in zip(heads, head_gradients)})

    np.testing.assert_allclose(objective.numpy(), expected_objective.numpy(), rtol=1e-5)
    assert set(found) == {variable.ref() for variable in model.trainable_variables}
    for variable, gradient in zip(model.trainable_variables, expected):
        assert found[variable.ref()].dtype == variable.dtype == tf.float32
        scale = np.abs(gradient.numpy()).max() + 1e-12
        np.testing.assert_allclose(found[variable.ref()].numpy() / scale,
                                   gradient.numpy() / scale, atol=TOLERANCES[compute_dtype],
                                   err_msg=variable.name)


def test_kept_outputs_are_the_conv_and_dense_layers_and_the_rest_is_recomputed():
    model, dtype = _model('dqn_net', None, (104, 80, 4))
    inputs = model.scaled(_observations((104, 80, 4), dtype, rows=2))
    every = activation_reuse.run_layers(model.torso, inputs)
    kept = activation_reuse.stored_outputs(model.torso, every)
    assert [output.shape[1:] for output in kept] == [
        (25, 19, 32), (12, 9, 64), (12, 9, 64), (512,)]
    again = activation_reuse.layer_outputs(model.torso, inputs, kept)
    assert len(again) == len(every) == 7  # 3 convs, 2 paddings, flatten, dense
    for first, second in zip(every, again):
        np.testing.assert_array_equal(first.numpy(), second.numpy())
    np.testing.assert_allclose(every[-1].numpy(), model.torso(inputs).numpy(), rtol=1e-6)


@pytest.mark.parametrize('torso, named', [
    (keras.Sequential([keras.layers.Conv2D(4, 3, activation='elu')]), 'activation elu'),
    (keras.Sequential([keras.layers.Conv2D(4, 3), keras.layers.BatchNormalization()]),
     'BatchNormalization'),
    (keras.Sequential([keras.layers.Dense(4, use_bias=False)]), 'has no bias'),
    (keras.Sequential([keras.layers.Conv2D(4, 3, dilation_rate=2)]), 'plain channels-last'),
    (keras.Sequential([keras.layers.Flatten(data_format='channels_first'),
                       keras.layers.Dense(4)]), "data_format 'channels_first'"),
    (keras.Sequential([keras.layers.Flatten()]), 'no Conv2D or Dense layer'),
])
def test_a_torso_it_cannot_reverse_is_refused_by_name(torso, named):
    torso.build((None, 8, 8, 2))
    with pytest.raises(ValueError, match=named):
        activation_reuse.check_torso(torso)


def test_a_dense_layer_on_images_is_refused_when_run():
    torso = keras.Sequential([keras.layers.Dense(4, activation='relu')])
    torso.build((None, 8, 8, 2))
    activation_reuse.check_torso(torso)  # its input rank shows only when it runs
    with pytest.raises(ValueError, match='takes rank 4 inputs; allowed: rank 2'):
        activation_reuse.run_layers(torso, tf.zeros((1, 8, 8, 2)))


@pytest.mark.parametrize('layers, named', [
    ([keras.layers.Conv2D(4, 3, dtype='float16')], 'computes in float16 on float16 variables'),
    ([keras.layers.Conv2D(4, 3, dtype='mixed_float16')], 'computes in float16 on float32'),
    ([keras.layers.Conv2D(4, 3, dtype='mixed_bfloat16'), keras.layers.Flatten(),
      keras.layers.Dense(4)], r"mixes compute dtypes \['bfloat16', 'float32'\]"),
])
def test_a_torso_in_another_dtype_or_in_two_is_refused(layers, named):
    torso = keras.Sequential(layers)
    torso.build((None, 8, 8, 2))
    with pytest.raises(ValueError, match=named):
        activation_reuse.check_torso(torso)


@pytest.mark.parametrize('compute_dtype', ['float32', 'bfloat16'])
def test_every_torso_of_the_tree_is_held_in_either_compute_dtype(compute_dtype):
    for network in networks.NETWORK_NAMES:
        shape = (4,) if network == 'mlp' else (104, 80, 4)
        activation_reuse.check_torso(_model(network, None, shape, compute_dtype)[0].torso)


def _paac_like_learner(horizon, seed=5, gae_lambda=None, standardize_observations=False,
                       compute_dtype='float32', **extra):
    from common.learners import actor_critic, optim  # pylint: disable=import-outside-toplevel

    def model():
        return networks.make_actor_critic(
            4, (44, 36, 4), np.uint8, network='nips', seed=seed, initializer='fan_in_uniform',
            standardize_observations=standardize_observations, compute_dtype=compute_dtype)

    if extra.get('acting_model') == 'copy':
        extra['acting_model'] = model()
    settings = actor_critic.LossSettings(gamma=0.99, entropy_coef=0.01, value_loss_coef=0.25,
                                         clip_norm=40.0, scale=5.0, gae_lambda=gae_lambda)
    spec = tf.TensorSpec((None, 44, 36, 4), tf.uint8)
    return actor_critic.ActorCriticLearner(model(), optim.RMSProp(0.01, epsilon=0.1), settings,
                                           spec, seed=seed, horizon=horizon, **extra)


@pytest.mark.slow
@pytest.mark.parametrize('compute_dtype', ['float32', 'bfloat16'])
def test_a_rollout_acted_and_trained_with_kept_outputs_updates_as_the_plain_learner(
        compute_dtype):
    """Two learners from the same weights and seed, over three rollouts of random frames: the
    keeping one acts (same actions) and trains on its kept outputs, the plain one trains on a
    forward pass of its own: the same statistics and the same weights after every update."""
    horizon, num_envs = 3, 4
    keeping = _paac_like_learner(horizon, reuse_activations=True, compute_dtype=compute_dtype)
    plain = _paac_like_learner(horizon, compute_dtype=compute_dtype)
    generator = np.random.default_rng(7)
    for _ in range(3):
        observations = generator.integers(0, 256, (horizon + 1, num_envs, 44, 36, 4), np.uint8)
        steps, actions = [], []
        for step in range(horizon):
            kept_actions, kept = keeping.act_keeping_outputs(observations[step])
            np.testing.assert_array_equal(kept_actions, plain.act(observations[step]))
            steps.append(kept)
            actions.append(kept_actions.numpy())
        rewards = generator.normal(size=(horizon, num_envs)).astype(np.float32)
        terminals = np.float32(generator.random((horizon, num_envs)) < 0.3)
        arrays = (observations, np.stack(actions), rewards, terminals)
        kept_stats = keeping.train_on_kept_outputs(*arrays, steps)
        plain_stats = plain.train_on_rollout(*arrays)
        for name in ('loss', 'policy_loss', 'value_loss', 'entropy', 'grad_norm'):
            np.testing.assert_allclose(kept_stats[name], plain_stats[name], rtol=1e-4,
                                       err_msg=name)
        for first, second in zip(keeping.model.get_weights(), plain.model.get_weights()):
            np.testing.assert_allclose(first, second, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize('extra, named', [
    ({'jit_compile': True}, 'jit_compile off'),
    ({'horizon': None}, 'a rollout horizon'),
    ({'gae_lambda': 0.95}, r'n-step returns \(gae_lambda None\)'),
    ({'acting_model': 'copy'}, 'no acting copy'),
    ({'standardize_observations': True}, 'no observation standardization'),
])
def test_a_learner_that_cannot_reuse_the_acting_pass_says_why(extra, named):
    values = {'horizon': 3, 'reuse_activations': True, **extra}
    with pytest.raises(ValueError, match=named):
        _paac_like_learner(**values)
