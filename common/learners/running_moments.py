"""Running mean and variance of a stream of batches, and the standardization by them that
rl_games applies to value targets and observations (rl_games/algos_torch/running_mean_std.py,
normalize_value and normalize_input): the network predicts standardized values, the learner turns
them back into returns' units for its advantages and standardizes the returns it regresses on;
observations are standardized element by element (each pixel of a frame stack) before the
torso."""
import tensorflow as tf

# rl_games' RunningMeanStd: standardized values are clipped to +-5 both ways, and epsilon is
# added to the variance before its square root.
CLIP = 5.0
EPSILON = 1e-5


class RunningMoments(tf.Module):
    """Mean and variance of every value update() has seen (Chan et al.'s parallel update), from a
    prior of one sample at mean 0 and variance 1 (rl_games' starting buffers); shape: one pair
    per element of a sample of that shape (() : of every value). Variables, so a checkpoint
    keeps them."""

    def __init__(self, shape=(), name='running_moments'):
        super().__init__(name=name)
        self.shape = tuple(shape)
        with tf.init_scope():
            self.mean = tf.Variable(tf.zeros(self.shape, tf.float64), trainable=False,
                                    name='mean')
            self.variance = tf.Variable(tf.ones(self.shape, tf.float64), trainable=False,
                                        name='variance')
            self.count = tf.Variable(1.0, dtype=tf.float64, trainable=False, name='count')

    def update(self, values):
        """Adds a batch of samples of self.shape (with shape (), values of any shape; at least 2
        samples): its mean and unbiased variance, element by element."""
        # The batch's moments in float32 (a minibatch of frames is millions of values), pooled
        # with the running ones in float64.
        values = tf.cast(tf.reshape(values, (-1,) + self.shape), tf.float32)
        batch_count = tf.cast(tf.shape(values)[0], tf.float64)
        batch_mean32, batch_variance32 = tf.nn.moments(values, axes=[0])
        batch_mean = tf.cast(batch_mean32, tf.float64)
        batch_variance = tf.cast(batch_variance32, tf.float64) * batch_count / (batch_count - 1.0)
        count = self.count.read_value()
        total = count + batch_count
        delta = batch_mean - self.mean
        squares = (self.variance * count + batch_variance * batch_count
                   + tf.square(delta) * count * batch_count / total)
        self.mean.assign_add(delta * batch_count / total)
        self.variance.assign(squares / total)
        self.count.assign(total)

    def _scale(self):
        return (tf.cast(self.mean, tf.float32),
                tf.sqrt(tf.cast(self.variance, tf.float32) + EPSILON))

    def standardize(self, values):
        """(values - mean) / sqrt(variance + EPSILON), clipped to [-CLIP, CLIP]."""
        mean, scale = self._scale()
        return tf.clip_by_value((values - mean) / scale, -CLIP, CLIP)

    def unstandardize(self, standardized):
        """standardize undone: clip to [-CLIP, CLIP], then x sqrt(variance + EPSILON) + mean."""
        mean, scale = self._scale()
        return tf.clip_by_value(standardized, -CLIP, CLIP) * scale + mean
