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


class ProcessTree:
    """What a test of a run's ending needs to see: its processes (from /proc), the shared-memory
    segments it left, and a bounded wait."""

    @staticmethod
    def children(pid):
        """Direct child pids of pid."""
        import os  # pylint: disable=import-outside-toplevel
        found = []
        for name in os.listdir('/proc'):
            if name.isdigit():
                try:
                    with open(f'/proc/{name}/stat') as f:
                        if int(f.read().rsplit(')', 1)[1].split()[1]) == pid:
                            found.append(int(name))
                except (OSError, IndexError):
                    pass
        return found

    @classmethod
    def descendants(cls, pid):
        pending, found = [pid], []
        while pending:
            children = cls.children(pending.pop())
            found += children
            pending += children
        return found

    @staticmethod
    def alive(pids):
        import os  # pylint: disable=import-outside-toplevel
        return [pid for pid in pids if os.path.exists(f'/proc/{pid}')]

    @staticmethod
    def wait_for(predicate, seconds=120.0):
        """True once predicate() is, False if it is not within seconds."""
        import time  # pylint: disable=import-outside-toplevel
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.2)
        return False

    @staticmethod
    def shm_entries():
        import os  # pylint: disable=import-outside-toplevel
        return {name for name in os.listdir('/dev/shm') if not name.startswith('sem.')}

    @staticmethod
    def mapped_shm():
        """The shared-memory segments some live process maps."""
        import os  # pylint: disable=import-outside-toplevel
        mapped = set()
        for name in os.listdir('/proc'):
            if name.isdigit():
                try:
                    with open(f'/proc/{name}/maps') as f:
                        mapped.update(line.split('/dev/shm/', 1)[1].split()[0]
                                      for line in f if '/dev/shm/' in line)
                except OSError:
                    pass
        return mapped

    @classmethod
    def leaked_shm(cls, before, seconds=15.0):
        """The segments that appeared since before (a shm_entries() set) and that no live process
        maps, still so after a bounded wait: what a run left behind. A segment that another
        test's live processes hold is theirs, so the tests can run in parallel (pytest -n)."""
        import time  # pylint: disable=import-outside-toplevel

        def unmapped():
            return (cls.shm_entries() - before) - cls.mapped_shm()

        deadline = time.monotonic() + seconds
        leaked = unmapped()
        while leaked and time.monotonic() < deadline:
            time.sleep(0.2)
            # Still there and still unmapped: one being made or removed this instant is not.
            leaked &= unmapped()
        return leaked


@pytest.fixture
def process_tree():
    return ProcessTree
