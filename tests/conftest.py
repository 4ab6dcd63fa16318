"""Fixtures shared across the test packages."""
import pytest


@pytest.fixture
def tf_agents_transitions():
    """build(observations, actions, rewards, next_observations, terminals): the batch of
    transitions as tf-agents' two-step Trajectory, what its DQN agents' _loss takes (a terminal
    transition's next step is LAST with discount 0)."""
    def build(observations, actions, rewards, next_observations, terminals):
        # Imported here: only the tests that use it load tf-agents.
        import numpy as np  # pylint: disable=import-outside-toplevel
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        from tf_agents.trajectories import time_step as ts  # pylint: disable=import-outside-toplevel
        from tf_agents.trajectories import trajectory  # pylint: disable=import-outside-toplevel
        batch = len(actions)
        mid = np.full((batch, 1), ts.StepType.MID, np.int32)
        next_type = np.where(terminals[:, None] > 0, ts.StepType.LAST,
                             ts.StepType.MID).astype(np.int32)
        experience = trajectory.Trajectory(
            step_type=np.concatenate([mid, next_type], axis=1),
            observation=np.stack([observations, next_observations], axis=1),
            action=np.stack([actions, actions], axis=1), policy_info=(),
            next_step_type=np.concatenate([next_type, mid], axis=1),
            reward=np.stack([rewards, rewards], axis=1),
            discount=np.stack([1.0 - terminals, np.ones(batch, np.float32)], axis=1))
        return tf.nest.map_structure(tf.convert_to_tensor, experience)
    return build
