"""Accelerated Methods for Deep Reinforcement Learning (Stooke & Abbeel, 2018): the synchronized
and alternating samplers with A2C and PPO (section 4, Appendix A)."""
