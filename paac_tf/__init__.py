"""PAAC: Efficient Parallel Methods for Deep Reinforcement Learning (Clemente et al., 2017)."""
