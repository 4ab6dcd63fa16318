"""Keras models shared by the papers: torsos, an actor-critic and a Q network, built from the
papers' configs.

Image models take uint8 (N, H, W, C) observations and scale them inside the model, so the uint8
arrays go to the device as they are (4x fewer bytes than float32). Float observations (CartPole)
are used as they come.

Initializers, both drawn from a model's own seed (so a config's seed fixes the starting weights):
Keras' default scheme (Glorot-uniform kernels, zero biases), or 'fan_in_uniform': kernels and
biases from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), Torch7's default, which both actor-critic
originals use (alfredvc/paac networks.py, NVlabs/GA3C NetworkVP.py). Under RMSProp with the
papers' epsilon of 0.1 the update is close to plain SGD, so the weights' starting scale sets
how fast each layer moves; the actor-critic presets use the originals' scheme.
Convolutions use 'valid' padding, as in the DQN and A3C papers, unless padding='same' (GA3C's
code pads: 84x84 -> 21x21 -> 11x11 on nips).
"""
import contextlib

import tensorflow as tf
# Keras 2 by its own name: tf.keras is Keras 3 unless TF_USE_LEGACY_KERAS was set before
# TensorFlow loaded, which a library user's process need not have done.
import tf_keras as keras

from common.learners import running_moments

__all__ = ('PADDINGS', 'nips', 'nature', 'ga3c_large', 'a3c_net', 'dqn_net', 'mlp', 'TORSOS',
           'NETWORK_NAMES', 'IMAGE_NETWORKS', 'PADDABLE_NETWORKS', 'scale_observations',
           'ActorCriticNetwork', 'QNetwork', 'DUELING_GRADIENT_SCALE', 'scale_gradient',
           'make_torso', 'INITIALIZERS', 'build', 'initialize', 'make_actor_critic',
           'actor_critic_for', 'make_q_network', 'COMPUTE_DTYPES', 'compute_dtype_scope')

layers = keras.layers


PADDINGS = ('valid', 'same')
# 'bfloat16': layers built under tf-keras' 'mixed_bfloat16' policy compute in bfloat16 (oneDNN's
# AVX512_BF16 kernels on a CPU that has them, tensor cores on a GPU) on float32 variables; the
# output heads stay float32, so losses, Q values and logits keep their precision. No paper's.
COMPUTE_DTYPES = ('float32', 'bfloat16')


@contextlib.contextmanager
def compute_dtype_scope(compute_dtype):
    """Layers created inside compute in compute_dtype (COMPUTE_DTYPES) on float32 variables.
    Sets tf-keras' global policy meanwhile (so build models from one thread at a time)."""
    if compute_dtype not in COMPUTE_DTYPES:
        raise ValueError(f'compute_dtype={compute_dtype!r}; allowed: {COMPUTE_DTYPES}')
    policy = 'mixed_bfloat16' if compute_dtype == 'bfloat16' else 'float32'
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def nips(padding='valid', name='nips'):
    """A3C-FF / Mnih et al. 2013 torso (PAAC's archnips): two convs and a 256-unit layer."""
    return keras.Sequential([
        layers.Conv2D(16, 8, strides=4, padding=padding, activation='relu'),
        layers.Conv2D(32, 4, strides=2, padding=padding, activation='relu'),
        layers.Flatten(),
        layers.Dense(256, activation='relu'),
    ], name=name)


def nature(padding='valid', name='nature'):
    """Mnih et al. 2015 DQN torso (PAAC's archnature): three convs and a 512-unit layer."""
    return keras.Sequential([
        layers.Conv2D(32, 8, strides=4, padding=padding, activation='relu'),
        layers.Conv2D(64, 4, strides=2, padding=padding, activation='relu'),
        layers.Conv2D(64, 3, strides=1, padding=padding, activation='relu'),
        layers.Flatten(),
        layers.Dense(512, activation='relu'),
    ], name=name)


def ga3c_large(first_stride=4, padding='valid', name='ga3c_large'):
    """GA3C's larger DNNs (paper, footnote 2): nips with 32 first-layer filters, a third conv.

    The paper varies the first stride from 4 down to 1 to raise the compute per frame; the
    dense layer stays 256 units (its input, and so its weight count, grows as the stride falls).
    """
    if first_stride not in (1, 2, 3, 4):
        raise ValueError(f'first_stride={first_stride!r}; allowed: 1, 2, 3, 4')
    return keras.Sequential([
        layers.Conv2D(32, 8, strides=first_stride, padding=padding, activation='relu'),
        layers.Conv2D(32, 4, strides=2, padding=padding, activation='relu'),
        layers.Conv2D(64, 4, strides=2, padding=padding, activation='relu'),
        layers.Flatten(),
        layers.Dense(256, activation='relu'),
    ], name=f'{name}_stride{first_stride}')


def a3c_net(name='a3c_net'):
    """Stooke & Abbeel's A3C-Net for 104x80 frames (Appendix A.1): nips with the second
    convolution padded by 1, so its output is 12x9 (32 x 12 x 9 features), then 256 units."""
    return keras.Sequential([
        layers.Conv2D(16, 8, strides=4, activation='relu'),
        layers.ZeroPadding2D(1),
        layers.Conv2D(32, 4, strides=2, activation='relu'),
        layers.Flatten(),
        layers.Dense(256, activation='relu'),
    ], name=name)


def dqn_net(name='dqn_net'):
    """Stooke & Abbeel's DQN-Net for 104x80 frames (Appendix A.1): nature with the second and
    third convolutions padded by 1, so the output is 12x9 (64 x 12 x 9 features), then 512."""
    return keras.Sequential([
        layers.Conv2D(32, 8, strides=4, activation='relu'),
        layers.ZeroPadding2D(1),
        layers.Conv2D(64, 4, strides=2, activation='relu'),
        layers.ZeroPadding2D(1),
        layers.Conv2D(64, 3, strides=1, activation='relu'),
        layers.Flatten(),
        layers.Dense(512, activation='relu'),
    ], name=name)


def mlp(hidden_sizes=(64, 64), activation='tanh', name='mlp'):
    """Fully connected torso for vector observations (CartPole and tests)."""
    return keras.Sequential(
        [layers.Flatten()] + [layers.Dense(size, activation=activation) for size in hidden_sizes],
        name=name)


TORSOS = {'nips': nips, 'nature': nature, 'ga3c_large': ga3c_large, 'a3c_net': a3c_net,
          'dqn_net': dqn_net, 'mlp': mlp}
NETWORK_NAMES = tuple(TORSOS)
IMAGE_NETWORKS = ('nips', 'nature', 'ga3c_large', 'a3c_net', 'dqn_net')
# Torsos that take padding= ('valid' or 'same'); a3c_net and dqn_net have their paper's.
PADDABLE_NETWORKS = ('nips', 'nature', 'ga3c_large')


def scale_observations(observations, input_scale, input_offset):
    """uint8 pixels -> float32 pixels * input_scale + input_offset; other dtypes pass through."""
    if observations.dtype != tf.uint8:
        return observations
    return tf.cast(observations, tf.float32) * input_scale + input_offset


class ActorCriticNetwork(keras.Model):
    """Torso, policy-logits head and value head: observations -> (logits [N, A], values [N]).
    observation_moments: a running_moments.RunningMoments of the scaled observations' shape;
    each observation is then standardized by it, element by element, before the torso (its
    moments are the model's non-trainable variables: a learner updates them, the checkpoint and
    the exported policy keep them)."""

    def __init__(self, torso, num_actions, input_scale=1 / 255, input_offset=0.0,
                 observation_moments=None, name='actor_critic'):
        super().__init__(name=name)
        self.torso = torso
        self.policy_head = layers.Dense(num_actions, name='policy_logits', dtype='float32')
        self.value_head = layers.Dense(1, name='value', dtype='float32')
        self.input_scale = input_scale
        self.input_offset = input_offset
        self.observation_moments = observation_moments

    def scaled(self, observations):
        """The observations as the torso's input takes them before any standardization."""
        return scale_observations(observations, self.input_scale, self.input_offset)

    def call(self, observations):
        inputs = self.scaled(observations)
        if self.observation_moments is not None:
            inputs = self.observation_moments.standardize(tf.cast(inputs, tf.float32))
        features = self.torso(inputs)
        # The float32 heads take the torso's features in float32 whatever its compute dtype.
        return self.policy_head(features), tf.squeeze(self.value_head(features), axis=-1)


class QNetwork(keras.Model):
    """Torso with a linear Q head, or dueling streams: observations -> Q values [N, A].

    Dueling (Wang et al. 2016, section 3 and Figure 1): the torso's last hidden layer becomes
    two, one per stream (value and advantage), each with its own linear output, combined as
    Q = V + A - mean_a(A); the gradient entering the shared layers is scaled by 1/sqrt(2)
    (section 4.2). With a support of K atoms (categorical DQN, Bellemare et al. 2017), the heads
    give K logits per action (dueling per atom, as Rainbow does), atom_logits() returns them
    [N, A, K], and calling the network gives the expected values sum_k softmax(logits)_k z_k.
    """

    def __init__(self, torso, num_actions, dueling=False, input_scale=1 / 255, input_offset=0.0,
                 support=None, name='q_network'):
        super().__init__(name=name)
        self.dueling = dueling
        self.num_actions = num_actions
        self.support = None if support is None else tf.constant(support, tf.float32)
        self.num_atoms = 1 if support is None else len(support)
        self.torso = torso
        if dueling:
            *shared, hidden = torso.layers
            if not isinstance(hidden, layers.Dense):
                raise ValueError(f'dueling needs a torso ending in a hidden Dense layer; '
                                 f'{torso.name} ends in {type(hidden).__name__}')
            self.torso = keras.Sequential(shared, name=f'{torso.name}_shared')
            self.value_stream = keras.Sequential([
                layers.Dense(hidden.units, activation=hidden.activation, name='value_hidden'),
                layers.Dense(self.num_atoms, name='value', dtype='float32')], name='value_stream')
            self.advantage_stream = keras.Sequential([
                layers.Dense(hidden.units, activation=hidden.activation,
                             name='advantage_hidden'),
                layers.Dense(num_actions * self.num_atoms, name='advantage', dtype='float32')],
                name='advantage_stream')
        else:
            self.q_head = layers.Dense(num_actions * self.num_atoms, name='q_values',
                                       dtype='float32')
        self.input_scale = input_scale
        self.input_offset = input_offset

    def atom_logits(self, observations):
        """[N, A] Q values without a support; [N, A, K] atom logits with one."""
        features = self.torso(scale_observations(observations, self.input_scale,
                                                 self.input_offset))
        if not self.dueling:
            outputs = self.q_head(features)
            if self.support is None:
                return outputs
            return tf.reshape(outputs, [-1, self.num_actions, self.num_atoms])
        features = scale_gradient(features, DUELING_GRADIENT_SCALE)
        values = self.value_stream(features)
        advantages = self.advantage_stream(features)
        if self.support is not None:
            advantages = tf.reshape(advantages, [-1, self.num_actions, self.num_atoms])
            values = values[:, None, :]
        return values + advantages - tf.reduce_mean(advantages, axis=1, keepdims=True)

    def call(self, observations):
        outputs = self.atom_logits(observations)
        if self.support is None:
            return outputs
        return tf.reduce_sum(tf.nn.softmax(outputs) * self.support, axis=-1)


# Wang et al. (2016), section 4.2: both streams' gradients enter the shared layers, rescaled.
DUELING_GRADIENT_SCALE = 2 ** -0.5


def scale_gradient(tensor, scale):
    """tensor in the forward pass; its gradient times scale in the backward pass."""
    return tensor * scale + tf.stop_gradient(tensor * (1.0 - scale))


def make_torso(network, observation_shape, torso_kwargs=None):
    """The named torso, checked against the observation rank it needs."""
    if network not in TORSOS:
        raise ValueError(f'network={network!r}; allowed: {sorted(NETWORK_NAMES)}')
    if network in IMAGE_NETWORKS and len(observation_shape) != 3:
        raise ValueError(f'network={network!r} needs (H, W, C) observations; '
                         f'got observation_shape={tuple(observation_shape)}')
    padding = (torso_kwargs or {}).get('padding', 'valid')
    if network not in PADDABLE_NETWORKS and 'padding' in (torso_kwargs or {}):
        raise ValueError(f'network={network!r} takes no padding=; only {PADDABLE_NETWORKS} do')
    if padding not in PADDINGS:
        raise ValueError(f'padding={padding!r}; allowed: {PADDINGS}')
    return TORSOS[network](**(torso_kwargs or {}))


INITIALIZERS = ('glorot_uniform', 'fan_in_uniform')


def build(model, observation_shape, observation_dtype):
    """Calls the model once on a zero batch so that its variables exist; returns it."""
    model(tf.zeros((1,) + tuple(observation_shape), tf.as_dtype(observation_dtype)))
    return model


def _dense_and_conv_layers(model):
    return [layer for layer in model.submodules
            if isinstance(layer, (layers.Dense, layers.Conv2D))]


def initialize(model, initializer, seed):
    """Redraws every Dense and Conv2D kernel and bias of a built model, seeded by seed:
    'fan_in_uniform': kernels and biases from U(-d, d), d = 1/sqrt(fan_in);
    'glorot_uniform': kernels from U(-d, d), d = sqrt(6 / (fan_in + fan_out)), zero biases
    (Keras' default scheme, drawn from this seed rather than TensorFlow's global one).
    fan_in and fan_out are the inputs and outputs of one unit (kernel size x channels)."""
    if initializer not in INITIALIZERS:
        raise ValueError(f'initializer={initializer!r}; allowed: {INITIALIZERS}')
    generator = tf.random.Generator.from_seed(seed)
    for layer in _dense_and_conv_layers(model):
        shape = [int(size) for size in layer.kernel.shape]
        receptive = 1
        for size in shape[:-2]:
            receptive *= size
        fan_in, fan_out = receptive * shape[-2], receptive * shape[-1]
        if initializer == 'fan_in_uniform':
            limit = 1.0 / fan_in ** 0.5
            layer.bias.assign(generator.uniform(layer.bias.shape, -limit, limit,
                                                layer.bias.dtype))
        else:
            limit = (6.0 / (fan_in + fan_out)) ** 0.5
            layer.bias.assign(tf.zeros_like(layer.bias))
        layer.kernel.assign(generator.uniform(layer.kernel.shape, -limit, limit,
                                              layer.kernel.dtype))
    return model


def make_actor_critic(num_actions, observation_shape, observation_dtype, network='nips',
                      input_scale=1 / 255, input_offset=0.0, torso_kwargs=None,
                      initializer='glorot_uniform', seed=0, compute_dtype='float32',
                      standardize_observations=False):
    """A built ActorCriticNetwork; GA3C's original scaling is input_scale=1/128, offset=-1.

    initializer: 'glorot_uniform' (Keras' default) or 'fan_in_uniform', seeded by seed.
    compute_dtype: the torso's (COMPUTE_DTYPES); the heads compute in float32.
    standardize_observations: each observation element standardized by running moments that
    the learner updates (rl_games' normalize_input).
    """
    moments = running_moments.RunningMoments(tuple(observation_shape), 'observation_moments') \
        if standardize_observations else None
    with compute_dtype_scope(compute_dtype):
        torso = make_torso(network, observation_shape, torso_kwargs)
        model = ActorCriticNetwork(torso, num_actions, input_scale=input_scale,
                                   input_offset=input_offset, observation_moments=moments)
        model = build(model, observation_shape, observation_dtype)
    return initialize(model, initializer, seed)


def actor_critic_for(env_config, network, initializer='glorot_uniform', seed=0,
                     torso_kwargs=None, compute_dtype='float32', standardize_observations=False):
    """make_actor_critic for env_config's observations and actions."""
    return make_actor_critic(
        num_actions=env_config.num_actions(), observation_shape=env_config.observation_shape,
        observation_dtype=env_config.observation_dtype, network=network,
        torso_kwargs=torso_kwargs, initializer=initializer, seed=seed,
        compute_dtype=compute_dtype, standardize_observations=standardize_observations)


def make_q_network(num_actions, observation_shape, observation_dtype, network='nature',
                   dueling=False, input_scale=1 / 255, input_offset=0.0, torso_kwargs=None,
                   initializer='glorot_uniform', seed=0, support=None, compute_dtype='float32'):
    """A built QNetwork (dueling optional; categorical over the atoms support, if given) on the
    named torso, initialized from seed; the torso computes in compute_dtype, the heads in
    float32."""
    with compute_dtype_scope(compute_dtype):
        torso = make_torso(network, observation_shape, torso_kwargs)
        model = QNetwork(torso, num_actions, dueling=dueling, input_scale=input_scale,
                         input_offset=input_offset, support=support)
        model = build(model, observation_shape, observation_dtype)
    return initialize(model, initializer, seed)
