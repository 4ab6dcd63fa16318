"""Networks, losses, optimizers and the learners that update them (actor-critic,
Q-learning)."""
