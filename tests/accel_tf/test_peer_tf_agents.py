"""The tf-agents peer of the PPO bench row: our pool as a batched tf-agents PyEnvironment, and
tf-agents' PPO agent and driver training on it."""
import sys

import numpy as np
import pytest

import common  # noqa: F401
from tf_agents.trajectories import time_step as ts

from accel_tf import bench_rows
from accel_tf import peer_tf_agents
from common.envs import atari
from common.envs import gym as gym_envs
from common.envs import pools


def test_pool_environment_steps_the_pool_with_tf_agents_step_types():
    config = gym_envs.GymConfig('CartPole-v1')
    with pools.SerialPool(config, 3, seed=2) as pool, pools.SerialPool(config, 3, seed=2) as twin:
        environment = peer_tf_agents.PoolEnvironment(pool, num_actions=2)
        assert environment.batched and environment.batch_size == 3
        first = environment.reset()
        np.testing.assert_array_equal(first.step_type, [ts.StepType.FIRST] * 3)
        np.testing.assert_array_equal(first.observation, twin.reset())
        seen_last = False
        for step in range(60):
            actions = np.full(3, step % 2, np.int32)
            time_step = environment.step(actions)
            expected = twin.step(actions)
            np.testing.assert_array_equal(time_step.observation, expected.observations)
            np.testing.assert_array_equal(time_step.reward, expected.rewards)
            np.testing.assert_array_equal(time_step.discount, 1.0 - expected.terminals)
            np.testing.assert_array_equal(
                time_step.step_type == ts.StepType.LAST, expected.dones)
            seen_last |= bool(expected.dones.any())
        assert seen_last  # alternating pushes end CartPole episodes well within 60 steps


@pytest.mark.slow
def test_tf_agents_ppo_trains_on_our_pool():
    config = atari.AtariConfig(game='pong', variant='stooke', decorrelation_steps=0)
    with pools.SerialPool(config, 2, seed=0) as pool:
        peer = peer_tf_agents.TFAgentsPPO(
            pool, config.num_actions(), horizon=3, learning_rate=1e-3, epochs=2,
            entropy_coef=0.01, value_loss_coef=1.0, ratio_clip=0.1, gae_lambda=0.95, gamma=0.99)
        before = [variable.numpy().copy() for variable in peer.agent.trainable_variables]
        assert np.isfinite(peer.iterate())
        after = peer.agent.trainable_variables
        assert any(np.abs(old - new.numpy()).max() > 0 for old, new in zip(before, after))
        assert int(peer.agent.train_step_counter.numpy()) == 2  # one step per epoch
        assert peer.buffer.num_frames().numpy() == 0  # cleared after training



def test_the_peer_row_without_tf_agents_names_the_install_in_one_line(monkeypatch):
    """tf-agents is an extra (setup.py 'peers'): without it the row stops before opening any
    pool, in one line naming the command that installs it."""
    for name in [name for name in sys.modules
                 if name.split('.')[0] == 'tf_agents' or name == 'accel_tf.peer_tf_agents']:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(sys.modules['accel_tf'], 'peer_tf_agents')  # imported afresh
    monkeypatch.setitem(sys.modules, 'tf_agents', None)  # `import tf_agents` now fails
    with pytest.raises(ModuleNotFoundError) as raised:
        bench_rows.ROWS['peer/tf_agents_ppo']({'num_envs': 4})
    assert str(raised.value) == ('the peer/tf_agents_ppo row needs tf-agents, which is not '
                                 "installed; pip install -e '.[peers]'")
