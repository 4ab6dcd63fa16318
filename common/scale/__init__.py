"""Several devices and machines: tf.distribute strategies, the multi-worker split and the
cluster (TF_CONFIG)."""
