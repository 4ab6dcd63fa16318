"""Accelerated Methods for Deep Reinforcement Learning (Stooke & Abbeel, 2018): the synchronized
and alternating samplers with A2C and PPO (section 4, Appendix A)."""
import common  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow is imported)
