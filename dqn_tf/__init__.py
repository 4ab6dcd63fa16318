"""Fast DQN: concurrent training and synchronized execution (Daley & Amato 2021)."""
import common  # noqa: F401  (TF_USE_LEGACY_KERAS before TensorFlow)
