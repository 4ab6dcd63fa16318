"""Fast DQN: concurrent training and synchronized execution (Daley & Amato 2021)."""
