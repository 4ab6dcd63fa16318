"""GA3C's batches padded up to a few sizes (buckets), so the model sees few input shapes.

A prediction batch holds whatever requests were waiting (1..prediction_batch_size) and a
training batch whatever experience merged past training_min_batch_size, so their sizes vary
from call to call. On a GPU, TensorFlow autotunes cuDNN's convolution algorithms for every new
input shape (TF_CUDNN_USE_AUTOTUNE, on by default), hundreds of times over a run; padded to the
power-of-two sizes below the largest batch and the largest itself, a run sees at most about
log2(largest) + 1 shapes per path. Padding rows are zeros, left out of the predictions handed
back and weighted 0 in the loss (ActorCriticLearner.train_on_padded_sequences). No TensorFlow
here: the trainer threads' batcher pads numpy batches before they reach tf.data.
"""
import numpy as np

PAD_BATCHES = ('auto', 'always', 'never')


def bucket_sizes(largest):
    """The sizes batches of 1..largest rows are padded to: the powers of two below largest,
    then largest itself."""
    if not isinstance(largest, (int, np.integer)) or largest < 1:
        raise ValueError(f'largest={largest!r}; must be an int >= 1')
    sizes, size = [], 1
    while size < largest:
        sizes.append(size)
        size *= 2
    return tuple(sizes) + (int(largest),)


def bucket_of(rows, sizes):
    """The smallest of sizes (ascending) holding rows; ValueError above the largest."""
    for size in sizes:
        if rows <= size:
            return size
    raise ValueError(f'a batch of {rows} rows; the buckets hold at most {sizes[-1]}')


def padded(array, size, value=0):
    """array with rows of value appended along its first axis up to size rows."""
    missing = size - len(array)
    if missing == 0:
        return array
    padding = np.full((missing,) + array.shape[1:], value, array.dtype)
    return np.concatenate([array, padding])


def largest_training_batch(min_batch_size, horizon):
    """The most rows a merged training batch can hold: items (at most horizon steps each) are
    merged while fewer than min_batch_size rows are held (ga3c_tf/trainer.py)."""
    return max(min_batch_size, 1) - 1 + horizon


def pad_sequences(batch, sizes):
    """An experience batch (observations, actions, rewards, sequence ends, end values,
    versions) padded to its bucket, with its number of real rows appended. Padding rows are
    one-step sequences (end 1, reward 0, end value 0) of zero observations and action 0, so
    the returns of the real rows, and their sequence layout (losses.sequence_returns), are as
    without them."""
    rows = len(batch[0])
    size = bucket_of(rows, sizes)
    observations, actions, rewards, sequence_ends, end_values, versions = batch
    return (padded(observations, size), padded(actions, size), padded(rewards, size),
            padded(sequence_ends, size, 1), padded(end_values, size), padded(versions, size),
            np.int32(rows))
