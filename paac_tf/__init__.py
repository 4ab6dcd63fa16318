"""PAAC: Efficient Parallel Methods for Deep Reinforcement Learning (Clemente et al., 2017)."""
import common  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow is imported)
