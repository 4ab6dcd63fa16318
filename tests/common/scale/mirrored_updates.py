"""Run by tests/common/scale/test_distribute.py in a fresh process (logical CPU devices must be made
before TensorFlow makes its devices): A2C, PPO, DQN and PAAC (its own learner, as
paac_tf.main builds it) updates, and A2C's and DQN's with XLA, on 2 replicas, each with half the batch, against one device with
the whole batch; prints one JSON line of the largest differences."""
import json
import sys

import common  # noqa: F401
import numpy as np
import tensorflow as tf

from common.scale import distribute

STRATEGY = distribute.make_strategy('mirrored', 2)

from accel_tf import ppo  # noqa: E402  (after the devices are made)
from common.envs import gym as gym_envs  # noqa: E402
from common.learners import actor_critic  # noqa: E402
from common.learners import networks  # noqa: E402
from common.learners import optim  # noqa: E402
from common.learners import q_learner  # noqa: E402
from paac_tf import paac  # noqa: E402

SPEC = tf.TensorSpec((None, 4), tf.float32)
T, N = 5, 4  # a rollout of 4 environments: 2 per replica
UPDATES = 3


def _rollout(seed):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(T + 1, N, 4)).astype(np.float32),
            rng.integers(0, 2, (T, N)).astype(np.int32), rng.normal(size=(T, N)).astype(np.float32),
            (rng.random((T, N)) < 0.2).astype(np.float32))


def _transitions(seed, size=8):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(size, 4)).astype(np.float32),
            rng.integers(0, 2, size).astype(np.int32), rng.normal(size=size).astype(np.float32),
            rng.normal(size=(size, 4)).astype(np.float32),
            (rng.random(size) < 0.3).astype(np.float32))


def _stacked_transitions(seed, minibatches=2):
    """K = 2 minibatches stacked, as QLearner.train_steps takes them (one update each)."""
    return tuple(np.stack(fields) for fields in zip(*[_transitions(seed * minibatches + index)
                                                      for index in range(minibatches)]))


def _weighted_transitions(seed):
    weights = np.random.default_rng(seed + 100).uniform(0.2, 1.0, 8).astype(np.float32)
    return _transitions(seed) + (weights,)


def _actor_critic_model():
    return networks.actor_critic_for(_CARTPOLE, 'mlp', seed=0,
                                     torso_kwargs={'hidden_sizes': (16,)})


class _CartPoleShape:
    observation_shape = (4,)
    observation_dtype = np.float32

    @staticmethod
    def num_actions():
        return 2


_CARTPOLE = _CartPoleShape()


def _a2c(jit_compile=False):
    settings = actor_critic.LossSettings(gamma=0.99, entropy_coef=0.01, value_loss_coef=0.5,
                                         clip_norm=0.05)
    return actor_critic.ActorCriticLearner(
        _actor_critic_model(), optim.RMSProp(0.01, decay=0.99, epsilon=1e-5), settings, SPEC,
        seed=0, horizon=T, jit_compile=jit_compile)


def _ppo():
    settings = ppo.PPOSettings(gamma=0.99, gae_lambda=0.95, ratio_clip=0.1, entropy_coef=0.01,
                               value_loss_coef=0.5, epochs=2, minibatches=2, clip_norm=0.05)
    return ppo.PPOLearner(_actor_critic_model(), optim.Adam(0.01), settings, SPEC, T, seed=0)


def _dqn(importance_weighted=False, jit_compile=False):
    make = lambda: networks.make_q_network(  # noqa: E731
        2, (4,), np.float32, network='mlp', torso_kwargs={'hidden_sizes': (16,)})
    return q_learner.QLearner(make, 2, q_learner.centered_rmsprop(0.01, 0.95, 0.01),
                              q_learner.QSettings(gamma=0.99, double_dqn=True, clip_norm=0.05,
                                                  importance_weighted=importance_weighted),
                              SPEC, jit_compile=jit_compile)


def _paac():
    return paac.build_learner(paac.PAACConfig(
        env_config=gym_envs.GymConfig('CartPole-v1'), network='mlp', num_envs=N, num_workers=2,
        horizon=T, learning_rate=0.01, total_steps=1000))


def _compare(name, build, model_of, train_of, split_axes, signature, data_of, gather=False):
    """split_axes None: the learner splits its steps itself (PPO's minibatch steps)."""
    single = build()
    with STRATEGY.scope():
        mirrored = build()
    model_of(mirrored).set_weights(model_of(single).get_weights())
    if hasattr(mirrored, 'update_target'):
        mirrored.update_target()
    if split_axes is None:
        replicated = train_of(mirrored)
    else:
        replicated = distribute.replicated(STRATEGY, train_of(mirrored), split_axes, signature,
                                           gather=gather)
    outputs = 0.0  # per-sample outputs (TD errors): the largest difference, in order
    for update in range(UPDATES):
        data = data_of(update)
        single_output = train_of(single)(*data)
        mirrored_output = replicated(*data)
        if isinstance(single_output, tf.Tensor):
            outputs = max(outputs, float(np.abs(single_output.numpy()
                                                - mirrored_output.numpy()).max()))
    difference = max(float(np.abs(a - b).max()) for a, b in
                     zip(model_of(single).get_weights(), model_of(mirrored).get_weights()))
    moved = max(float(np.abs(a - b).max()) for a, b in
                zip(model_of(single).get_weights(), model_of(build()).get_weights()))
    replicas = max(float(np.abs(v.values[0].numpy() - v.values[1].numpy()).max())
                   for v in model_of(mirrored).trainable_variables)
    iterations = int(mirrored.optimizer.iterations.numpy())
    return name, {'difference': difference, 'moved': moved, 'replicas': replicas,
                  'iterations': iterations, 'outputs': outputs}


def main():
    rollout_signature = actor_critic.rollout_signature(SPEC, T)
    results = dict([
        _compare('a2c', _a2c, lambda learner: learner.model,
                 lambda learner: learner._train_on_rollout, (1, 1, 1, 1), rollout_signature,
                 _rollout),
        _compare('ppo', _ppo, lambda learner: learner.model,
                 lambda learner: learner.train_on_rollout, None, rollout_signature, _rollout),
        # The learner's own functions, built under the strategy's scope: K minibatches per
        # call (the replay runners' train_steps) and prioritized replay's weighted update.
        _compare('dqn', _dqn, lambda learner: learner.online,
                 lambda learner: learner.train_steps, None, None, _stacked_transitions),
        _compare('dqn_weighted', lambda: _dqn(importance_weighted=True),
                 lambda learner: learner.online, lambda learner: learner.weighted_train_step,
                 None, None, _weighted_transitions),
        _compare('paac', _paac, lambda learner: learner.model,
                 lambda learner: learner.train_on_rollout, None, rollout_signature, _rollout),
        # With the network calls XLA-compiled (RunConfig.jit_compile) inside each replica.
        _compare('a2c_xla', lambda: _a2c(jit_compile=True), lambda learner: learner.model,
                 lambda learner: learner.train_on_rollout, None, rollout_signature, _rollout),
        _compare('dqn_xla', lambda: _dqn(jit_compile=True), lambda learner: learner.online,
                 lambda learner: learner.train_steps, None, None, _stacked_transitions),
    ])
    results['devices'] = [device.name for device in tf.config.list_logical_devices('CPU')]
    print(json.dumps(results))
    return 0


if __name__ == '__main__':
    sys.exit(main())
