"""The peer row `peer/tf_agents_ppo`: tf-agents' own PPO agent and driver, the library a
TensorFlow user would otherwise pick, on the same Atari pool, frames, network shape and batch as
`accel/ppo`, so the two are measured side by side (python -m common.bench).

Our pool becomes a batched tf-agents PyEnvironment through PoolEnvironment. The pool resets an
ended episode within the step, so a LAST step carries the next episode's first observation and
the step after it is MID rather than FIRST: the same work per step, slightly different episode
bookkeeping, which a throughput row does not see.
"""
import numpy as np
import tensorflow as tf
from tf_agents.agents.ppo import ppo_clip_agent
from tf_agents.drivers import dynamic_step_driver
from tf_agents.environments import py_environment
from tf_agents.environments import tf_py_environment
from tf_agents.networks import actor_distribution_network
from tf_agents.networks import value_network
from tf_agents.replay_buffers import tf_uniform_replay_buffer
from tf_agents.specs import array_spec
from tf_agents.trajectories import time_step as ts

# A3C-Net's layers (Stooke & Abbeel, Appendix A.1) as tf-agents' (filters, kernel, stride).
CONV_LAYERS = ((16, 8, 4), (32, 4, 2))
HIDDEN_UNITS = (256,)


class PoolEnvironment(py_environment.PyEnvironment):
    """A batched PyEnvironment over one of our pools (discrete actions)."""

    def __init__(self, pool, num_actions):
        super().__init__(handle_auto_reset=False)
        self._pool = pool
        self._observation_spec = array_spec.ArraySpec(
            tuple(pool.observation_shape), pool.observation_dtype, name='observation')
        self._action_spec = array_spec.BoundedArraySpec((), np.int32, 0, num_actions - 1,
                                                        name='action')

    @property
    def batched(self):
        return True

    @property
    def batch_size(self):
        return self._pool.num_envs

    def observation_spec(self):
        return self._observation_spec

    def action_spec(self):
        return self._action_spec

    def _reset(self):
        return ts.restart(self._pool.reset().copy(), batch_size=self._pool.num_envs)

    def _step(self, action):
        result = self._pool.step(np.asarray(action, np.int32))
        step_type = np.where(result.dones, ts.StepType.LAST, ts.StepType.MID).astype(np.int32)
        return ts.TimeStep(step_type, result.rewards.astype(np.float32),
                           (1.0 - result.terminals).astype(np.float32),
                           result.observations.copy())


def _scaled_pixels():
    return tf.keras.layers.Lambda(lambda pixels: tf.cast(pixels, tf.float32) / 255.0)


def make_agent(tf_env, learning_rate, epochs, entropy_coef, value_loss_coef, ratio_clip,
               gae_lambda, gamma):
    """tf-agents' PPOClipAgent with A3C-Net-shaped actor and value networks."""
    observation_spec, action_spec = tf_env.observation_spec(), tf_env.action_spec()
    actor = actor_distribution_network.ActorDistributionNetwork(
        observation_spec, action_spec, preprocessing_layers=_scaled_pixels(),
        conv_layer_params=CONV_LAYERS, fc_layer_params=HIDDEN_UNITS)
    value = value_network.ValueNetwork(
        observation_spec, preprocessing_layers=_scaled_pixels(), conv_layer_params=CONV_LAYERS,
        fc_layer_params=HIDDEN_UNITS)
    agent = ppo_clip_agent.PPOClipAgent(
        tf_env.time_step_spec(), action_spec,
        optimizer=tf.keras.optimizers.Adam(learning_rate=learning_rate),
        actor_net=actor, value_net=value, importance_ratio_clipping=ratio_clip,
        lambda_value=gae_lambda, discount_factor=gamma, entropy_regularization=entropy_coef,
        value_pred_loss_coef=value_loss_coef, num_epochs=epochs, use_gae=True,
        normalize_observations=False, normalize_rewards=False)
    agent.initialize()
    return agent


class TFAgentsPPO:
    """One iterate() = tf-agents' driver collecting horizon steps of every environment into
    its replay buffer, then agent.train on them (num_epochs passes), then clearing it."""

    def __init__(self, pool, num_actions, horizon, **agent_settings):
        self.tf_env = tf_py_environment.TFPyEnvironment(PoolEnvironment(pool, num_actions))
        self.agent = make_agent(self.tf_env, **agent_settings)
        self.buffer = tf_uniform_replay_buffer.TFUniformReplayBuffer(
            self.agent.collect_data_spec, batch_size=pool.num_envs, max_length=horizon + 1)
        self.driver = dynamic_step_driver.DynamicStepDriver(
            self.tf_env, self.agent.collect_policy, observers=[self.buffer.add_batch],
            num_steps=horizon * pool.num_envs)
        self.driver.run = tf.function(self.driver.run)
        self.agent.train = tf.function(self.agent.train)
        self.time_step = self.tf_env.reset()
        self.policy_state = self.agent.collect_policy.get_initial_state(pool.num_envs)

    def iterate(self):
        self.time_step, self.policy_state = self.driver.run(self.time_step, self.policy_state)
        loss = self.agent.train(self.buffer.gather_all()).loss
        self.buffer.clear()
        return float(loss)
