"""The acting pass reused by the update: an update whose parameters are the ones that acted (PAAC's
Algorithm 1, A2C: one update per rollout, after it) would compute again, in its forward pass, the
torso outputs the rollout's policy calls already computed. Kept from acting, they let the update
run the backward pass alone: the same gradients without a second forward pass over the rollout
(PAAC's network work per step 1.18-1.30x as fast on a 2-core CPU, docs/benchmarks/journal.md,
2026-11-29).

run_layers(torso, inputs) -> every layer's output; torso_gradients(...) -> each torso variable's
gradient, by the formulas of TensorFlow's own gradients of these layers (the Conv2D backprop ops,
MatMul's, ReLU's and tanh's from their outputs), so the update is the one autodiff gives.
Torsos of Conv2D, Dense, Flatten and ZeroPadding2D layers computing in float32, or in bfloat16
on float32 variables (tf-keras' mixed_bfloat16: every torso of common/learners/networks.py, in
either RunConfig.compute_dtype) are supported; check_torso names anything else. In bfloat16 the
backward pass runs in bfloat16 as autodiff's does: each layer's kernel cast to it, each gradient
cast back to its float32 variable.
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
COMPUTE_DTYPES = ('float32', 'bfloat16')


def check_torso(torso):
    """Raises ValueError naming the first layer whose backward pass this module does not hold."""
    if not any(isinstance(layer, STORED_LAYERS) for layer in torso.layers):
        raise ValueError(f'reusing the acting pass: torso {torso.name!r} has no Conv2D or Dense '
                         'layer (nothing to keep)')
    dtypes = {layer.compute_dtype for layer in torso.layers}
    for layer in torso.layers:
        if layer.compute_dtype not in COMPUTE_DTYPES or layer.variable_dtype != 'float32':
            raise ValueError(f'reusing the acting pass: layer {layer.name!r} computes in '
                             f'{layer.compute_dtype} on {layer.variable_dtype} variables (allowed: '
                             f'{" or ".join(COMPUTE_DTYPES)} on float32 variables)')
        if len(dtypes) > 1:
            raise ValueError(f'reusing the acting pass: the torso {torso.name!r} mixes compute '
                             f'dtypes {sorted(dtypes)} (allowed: one of {COMPUTE_DTYPES})')
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


def _weighted_layer_gradients(layer, layer_input, upstream, propagate):
    """(kernel gradient, bias gradient, gradient with respect to the layer's input or None) of a
    Conv2D or Dense layer, given the gradient upstream of its pre-activation, in its compute
    dtype (the kernel cast to it, as the layer's call does)."""
    kernel = tf.cast(layer.kernel, upstream.dtype)
    below = None
    if isinstance(layer, layers.Dense):
        kernel_gradient = tf.matmul(layer_input, upstream, transpose_a=True)
        if propagate:
            below = tf.matmul(upstream, kernel, transpose_b=True)
    else:
        strides, padding = [1, *layer.strides, 1], layer.padding.upper()
        kernel_gradient = tf.raw_ops.Conv2DBackpropFilter(
            input=layer_input, filter_sizes=tf.shape(kernel), out_backprop=upstream,
            strides=strides, padding=padding)
        if propagate:
            below = tf.raw_ops.Conv2DBackpropInput(
                input_sizes=tf.shape(layer_input), filter=kernel, out_backprop=upstream,
                strides=strides, padding=padding)
    return kernel_gradient, tf.raw_ops.BiasAddGrad(out_backprop=upstream), below


def torso_gradients(torso, inputs, outputs, features_gradient):
    """{variable.ref(): gradient} of the torso's trainable variables for the gradient
    features_gradient of the objective with respect to the torso's output, given the torso's
    inputs and every layer's output on them (run_layers or layer_outputs)."""
    gradients = {}
    upstream = tf.cast(features_gradient, torso.layers[0].compute_dtype)
    inputs = tf.cast(inputs, upstream.dtype)  # as the first layer's call casts them
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
        kernel_gradient, bias_gradient, upstream = _weighted_layer_gradients(
            layer, layer_input, upstream, index > first_weighted)
        gradients[layer.kernel.ref()] = tf.cast(kernel_gradient, layer.variable_dtype)
        gradients[layer.bias.ref()] = tf.cast(bias_gradient, layer.variable_dtype)
    return gradients
