"""Python numbers for TensorFlow as 0-d numpy arrays, which TF's eager runtime does not cache.

TensorFlow keeps a tensor for every distinct Python int or float it converts (np.float64 too:
it subclasses float), about 0.5 KB each, and none was freed over 60,000 values. A step counter
assigned to a variable at every poll grew GA3C's main process by about 1 MB a minute that way.
"""
import numpy as np


def uncached(value, dtype):
    """value as a 0-d numpy array of dtype: the same tensor value, without the cache entry."""
    return np.asarray(value, dtype)


def assign(variable, value):
    """variable.assign(value) for a Python number, without growing TF's cache."""
    return variable.assign(uncached(value, variable.dtype.as_numpy_dtype))
