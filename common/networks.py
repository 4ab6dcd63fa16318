"""Keras models shared by the papers: torsos, an actor-critic and a Q network, built by gin.

Image models take uint8 (N, H, W, C) observations and scale them inside the model, so the uint8
arrays go to the device as they are (4x fewer bytes than float32). Float observations (CartPole)
are used as they come.

Layers keep Keras' default initializers (Glorot-uniform kernels, zero biases): the originals
differ from each other (TF1 variance scaling in GA3C, fan-in uniform in PAAC's code), none is
tied to a reported result, so no paper-specific scheme is reproduced here.
Convolutions use 'valid' padding, as in the DQN and A3C papers.
"""
import gin
import tensorflow as tf

layers = tf.keras.layers


def nips(name='nips'):
    """A3C-FF / Mnih et al. 2013 torso (PAAC's archnips): two convs and a 256-unit layer."""
    return tf.keras.Sequential([
        layers.Conv2D(16, 8, strides=4, activation='relu'),
        layers.Conv2D(32, 4, strides=2, activation='relu'),
        layers.Flatten(),
        layers.Dense(256, activation='relu'),
    ], name=name)


def nature(name='nature'):
    """Mnih et al. 2015 DQN torso (PAAC's archnature): three convs and a 512-unit layer."""
    return tf.keras.Sequential([
        layers.Conv2D(32, 8, strides=4, activation='relu'),
        layers.Conv2D(64, 4, strides=2, activation='relu'),
        layers.Conv2D(64, 3, strides=1, activation='relu'),
        layers.Flatten(),
        layers.Dense(512, activation='relu'),
    ], name=name)


def ga3c_large(first_stride=4, name='ga3c_large'):
    """GA3C's larger DNNs (paper, footnote 2): nips with 32 first-layer filters, a third conv.

    The paper varies the first stride from 4 down to 1 to raise the compute per frame; the
    dense layer stays 256 units (its input, and so its weight count, grows as the stride falls).
    """
    if first_stride not in (1, 2, 3, 4):
        raise ValueError(f'first_stride={first_stride!r}; allowed: 1, 2, 3, 4')
    return tf.keras.Sequential([
        layers.Conv2D(32, 8, strides=first_stride, activation='relu'),
        layers.Conv2D(32, 4, strides=2, activation='relu'),
        layers.Conv2D(64, 4, strides=2, activation='relu'),
        layers.Flatten(),
        layers.Dense(256, activation='relu'),
    ], name=f'{name}_stride{first_stride}')


def mlp(hidden_sizes=(64, 64), activation='tanh', name='mlp'):
    """Fully connected torso for vector observations (CartPole and tests)."""
    return tf.keras.Sequential(
        [layers.Flatten()] + [layers.Dense(size, activation=activation) for size in hidden_sizes],
        name=name)


TORSOS = {'nips': nips, 'nature': nature, 'ga3c_large': ga3c_large, 'mlp': mlp}
NETWORK_NAMES = tuple(TORSOS)
IMAGE_NETWORKS = ('nips', 'nature', 'ga3c_large')


def scale_observations(observations, input_scale, input_offset):
    """uint8 pixels -> float32 pixels * input_scale + input_offset; other dtypes pass through."""
    if observations.dtype != tf.uint8:
        return observations
    return tf.cast(observations, tf.float32) * input_scale + input_offset


class ActorCriticNetwork(tf.keras.Model):
    """Torso, policy-logits head and value head: observations -> (logits [N, A], values [N])."""

    def __init__(self, torso, num_actions, input_scale=1 / 255, input_offset=0.0,
                 name='actor_critic'):
        super().__init__(name=name)
        self.torso = torso
        self.policy_head = layers.Dense(num_actions, name='policy_logits')
        self.value_head = layers.Dense(1, name='value')
        self.input_scale = input_scale
        self.input_offset = input_offset

    def call(self, observations):
        features = self.torso(scale_observations(observations, self.input_scale,
                                                 self.input_offset))
        # float32 outputs whatever the compute dtype (mixed precision), so losses stay float32.
        logits = tf.cast(self.policy_head(features), tf.float32)
        return logits, tf.cast(tf.squeeze(self.value_head(features), axis=-1), tf.float32)


class QNetwork(tf.keras.Model):
    """Torso with a linear Q head, or dueling streams: observations -> Q values [N, A].

    Dueling (Wang et al. 2016): Q = V + A - mean_a(A); here both streams are linear on the
    torso's features rather than each having its own hidden layer.
    """

    def __init__(self, torso, num_actions, dueling=False, input_scale=1 / 255, input_offset=0.0,
                 name='q_network'):
        super().__init__(name=name)
        self.torso = torso
        self.dueling = dueling
        # Per-action outputs: the Q values, or the advantage stream when dueling.
        self.action_head = layers.Dense(num_actions, name='advantage' if dueling else 'q_values')
        self.value_head = layers.Dense(1, name='value') if dueling else None
        self.input_scale = input_scale
        self.input_offset = input_offset

    def call(self, observations):
        features = self.torso(scale_observations(observations, self.input_scale,
                                                 self.input_offset))
        action_outputs = self.action_head(features)
        if not self.dueling:
            return action_outputs
        advantages = action_outputs - tf.reduce_mean(action_outputs, axis=-1, keepdims=True)
        return self.value_head(features) + advantages


def make_torso(network, observation_shape, torso_kwargs=None):
    """The named torso, checked against the observation rank it needs."""
    if network not in TORSOS:
        raise ValueError(f'network={network!r}; allowed: {sorted(NETWORK_NAMES)}')
    if network in IMAGE_NETWORKS and len(observation_shape) != 3:
        raise ValueError(f'network={network!r} needs (H, W, C) observations; '
                         f'got observation_shape={tuple(observation_shape)}')
    return TORSOS[network](**(torso_kwargs or {}))


def build(model, observation_shape, observation_dtype):
    """Calls the model once on a zero batch so that its variables exist; returns it."""
    model(tf.zeros((1,) + tuple(observation_shape), tf.as_dtype(observation_dtype)))
    return model


@gin.configurable
def make_actor_critic(num_actions, observation_shape, observation_dtype, network='nips',
                      input_scale=1 / 255, input_offset=0.0, torso_kwargs=None):
    """A built ActorCriticNetwork; GA3C's original scaling is input_scale=1/128, offset=-1."""
    torso = make_torso(network, observation_shape, torso_kwargs)
    model = ActorCriticNetwork(torso, num_actions, input_scale=input_scale,
                               input_offset=input_offset)
    return build(model, observation_shape, observation_dtype)


@gin.configurable
def make_q_network(num_actions, observation_shape, observation_dtype, network='nature',
                   dueling=False, input_scale=1 / 255, input_offset=0.0, torso_kwargs=None):
    """A built QNetwork (dueling optional) on the named torso."""
    torso = make_torso(network, observation_shape, torso_kwargs)
    model = QNetwork(torso, num_actions, dueling=dueling, input_scale=input_scale,
                     input_offset=input_offset)
    return build(model, observation_shape, observation_dtype)
