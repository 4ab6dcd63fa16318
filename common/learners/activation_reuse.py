"""The acting pass reused by the update: an update whose parameters are the ones that acted (PAAC's
Algorithm 1, A2C: one update per rollout, after it) would compute again, in its forward pass, the
torso outputs the rollout's policy calls already computed. Kept from acting, they let the update
run the backward pass alone: the same gradients without a second forward pass over the rollout
(PAAC's network work per step 1.18-1.30x as fast on a 2-core CPU, BENCHMARKS.md 2026-11-29).

run_layers(torso, inputs) -> every layer's output; torso_gradients(...) -> each torso variable's
gradient, by the formulas of TensorFlow's own gradients of these layers (the Conv2D backprop ops,
MatMul's, ReLU's and tanh's from their outputs), so the update is the one autodiff gives.
Torsos of Conv2D, Dense, Flatten and ZeroPadding2D layers computing in float32 (every torso of
common/learners/networks.py) are supported; check_torso names anything else.
"""
import tensorflow as tf
import tf_keras as keras

__all__ = ('check_torso', 'run_layers', 'STORED_LAYERS', 'stored_outputs', 'layer_outputs',
           'torso_gradients')

layers = keras.layers
ACTIVATIONS = {keras.activations.relu: 'relu', keras.activations.tanh: 'tanh',
               keras.activations.linear: 'linear'}
# Layers whose outputs the acting pass keeps; the others' (reshapes, zero padding) are cheap
# to recompute from the layer before.
STORED_LAYERS = (layers.Conv2D, layers.Dense)
RECOMPUTED_LAYERS = (layers.Flatten, layers.ZeroPadding2D)


def check_torso(torso):
    """Raises ValueError naming the first layer whose backward pass this module does not hold."""
    if not any(isinstance(layer, STORED_LAYERS) for layer in torso.layers):
        raise ValueError(f'reusing the acting pass: torso {torso.name!r} has no Conv2D or Dense '
                         'layer (nothing to keep)')
    for layer in torso.layers:
        if layer.compute_dtype != 'float32':
            raise ValueError(f'reusing the acting pass needs a float32 torso; layer {layer.name!r}'
                             f' computes in {layer.compute_dtype} (allowed: float32)')
        if isinstance(layer, RECOMPUTED_LAYERS):
            if getattr(layer, 'data_format', 'channels_last') != 'channels_last':
                raise ValueError(f'reusing the acting pass: layer {layer.name!r} has data_format '
                                 f'{layer.data_format!r}; allowed: channels_last')
            continue
        if not isinstance(layer, STORED_LAYERS):
            raise ValueError(f'reusing the acting pass: layer {layer.name!r} is a '
                             f'{type(layer).__name__}; allowed: Conv2D, Dense, Flatten, '
                             'ZeroPadding2D')
        if layer.activation not in ACTIVATIONS:
            raise ValueError(f'reusing the acting pass: layer {layer.name!r} has activation '
                             f'{layer.activation.__name__}; allowed: '
                             f'{sorted(ACTIVATIONS.values())}')
        if not layer.use_bias:
            raise ValueError(f'reusing the acting pass: layer {layer.name!r} has no bias; '
                             'allowed: layers with biases')
        if isinstance(layer, layers.Conv2D) and (
                tuple(layer.dilation_rate) != (1, 1) or layer.groups != 1
                or layer.data_format != 'channels_last' or type(layer) is not layers.Conv2D):
            raise ValueError(f'reusing the acting pass: Conv2D {layer.name!r} must be a plain '
                             'channels-last convolution (dilation 1, one group)')


def run_layers(torso, inputs):
    """The torso's layers applied one by one to inputs (what calling the Sequential does); the
    list of every layer's output, the last being the features. A Dense layer must take a batch
    of vectors (its backward pass here is a plain matrix product)."""
    outputs = []
    for layer in torso.layers:
        if isinstance(layer, layers.Dense) and inputs.shape.rank != 2:
            raise ValueError(f'reusing the acting pass: Dense layer {layer.name!r} takes rank '
                             f'{inputs.shape.rank} inputs; allowed: rank 2 (after a Flatten)')
        inputs = layer(inputs)
        outputs.append(inputs)
    return outputs


def stored_outputs(torso, outputs):
    """The outputs of run_layers() that the acting pass keeps (STORED_LAYERS'), in layer
    order."""
    return [output for layer, output in zip(torso.layers, outputs)
            if isinstance(layer, STORED_LAYERS)]


def layer_outputs(torso, inputs, stored):
    """Every layer's output again from the kept ones (stored_outputs), recomputing only the
    cheap RECOMPUTED_LAYERS from the output before them."""
    stored = list(stored)
    outputs = []
    for layer in torso.layers:
        if isinstance(layer, STORED_LAYERS):
            outputs.append(stored.pop(0))
        else:
            outputs.append(layer(outputs[-1] if outputs else inputs))
    return outputs


def _activation_gradient(layer, output, upstream):
    kind = ACTIVATIONS[layer.activation]
    if kind == 'relu':
        return tf.raw_ops.ReluGrad(gradients=upstream, features=output)
    if kind == 'tanh':
        return tf.raw_ops.TanhGrad(y=output, dy=upstream)
    return upstream


def _unpad(layer, upstream):
    (top, bottom), (left, right) = layer.padding
    shape = tf.shape(upstream)
    return upstream[:, top:shape[1] - bottom, left:shape[2] - right, :]


def torso_gradients(torso, inputs, outputs, features_gradient):
    """{variable.ref(): gradient} of the torso's trainable variables for the gradient
    features_gradient of the objective with respect to the torso's output, given the torso's
    inputs and every layer's output on them (run_layers or layer_outputs)."""
    gradients = {}
    upstream = features_gradient
    first_weighted = min(index for index, layer in enumerate(torso.layers)
                         if isinstance(layer, STORED_LAYERS))
    for index in reversed(range(first_weighted, len(torso.layers))):
        layer = torso.layers[index]
        layer_input = outputs[index - 1] if index else inputs
        if isinstance(layer, layers.Flatten):
            upstream = tf.reshape(upstream, tf.shape(layer_input))
            continue
        if isinstance(layer, layers.ZeroPadding2D):
            upstream = _unpad(layer, upstream)
            continue
        upstream = _activation_gradient(layer, outputs[index], upstream)
        if isinstance(layer, layers.Dense):
            gradients[layer.kernel.ref()] = tf.matmul(layer_input, upstream, transpose_a=True)
            gradients[layer.bias.ref()] = tf.reduce_sum(upstream, axis=0)
            if index > first_weighted:
                upstream = tf.matmul(upstream, layer.kernel, transpose_b=True)
        else:
            strides = [1, *layer.strides, 1]
            padding = layer.padding.upper()
            gradients[layer.kernel.ref()] = tf.raw_ops.Conv2DBackpropFilter(
                input=layer_input, filter_sizes=tf.shape(layer.kernel), out_backprop=upstream,
                strides=strides, padding=padding)
            gradients[layer.bias.ref()] = tf.reduce_sum(upstream, axis=[0, 1, 2])
            if index > first_weighted:
                upstream = tf.raw_ops.Conv2DBackpropInput(
                    input_sizes=tf.shape(layer_input), filter=layer.kernel,
                    out_backprop=upstream, strides=strides, padding=padding)
    return gradients
