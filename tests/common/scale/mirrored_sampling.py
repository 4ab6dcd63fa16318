"""Run by tests/common/scale/test_distribute.py in a fresh process (logical CPU devices must be made
before TensorFlow makes its devices): with 2 replicas, each replica acts for its own sampler
groups' simulators. The replicas' policy heads are made to disagree on purpose (replica 0
always picks action 0, replica 1 action 1), so the rollout shows which replica acted for which
simulator; prints one JSON line of what it saw."""
import json

import common  # noqa: F401
import numpy as np
import tensorflow as tf

from common.scale import distribute

STRATEGY = distribute.make_strategy('mirrored', 2)

from common.envs import gym as gym_envs  # noqa: E402
from common.envs import pools  # noqa: E402
from common.launch import config as config_lib  # noqa: E402
from common.learners import actor_critic  # noqa: E402  (after the devices are made)
from common.learners import networks  # noqa: E402
from common.learners import optim  # noqa: E402
from common.units import samplers  # noqa: E402

CARTPOLE = gym_envs.GymConfig('CartPole-v1')
NUM_ENVS = 8


def _learner():
    with STRATEGY.scope():
        model = networks.actor_critic_for(CARTPOLE, 'mlp', seed=0,
                                          torso_kwargs={'hidden_sizes': (16,)})
        settings = actor_critic.LossSettings(gamma=0.99, entropy_coef=0.01, value_loss_coef=0.5)
        return actor_critic.ActorCriticLearner(
            model, optim.RMSProp(0.01, decay=0.99, epsilon=1e-5), settings,
            actor_critic.observation_spec(CARTPOLE), seed=0, horizon=5)


def _replicas_disagree(bias):
    """Replica r's copy of the policy bias makes action r certain."""
    def assign():
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        bias.assign(tf.where(tf.equal(replica, 0), [50.0, -50.0], [-50.0, 50.0]))
    STRATEGY.run(assign)


def _actions_by_block(kind, learner):
    distribute_config = config_lib.DistributeConfig(strategy='mirrored', num_replicas=2)
    groups = config_lib.sampler_groups(kind, distribute_config)
    with pools.ProcessPool(CARTPOLE, NUM_ENVS, num_workers=groups, seed=3,
                           num_groups=groups) as pool:
        sampler = samplers.make_sampler(kind, pool, 5)
        sampler.collect(lambda observations: learner.act(observations).numpy())
        actions = sampler.rollout.actions
    half = NUM_ENVS // 2
    return {'groups': groups, 'first_block': sorted(set(actions[:, :half].ravel().tolist())),
            'second_block': sorted(set(actions[:, half:].ravel().tolist()))}


def main():
    learner = _learner()
    # Identical copies: each replica draws from its own stream (the same observations twice
    # get different actions in the two blocks).
    observations = np.zeros((128, 4), np.float32)
    streams = learner.act(observations).numpy()
    found = {'streams_differ': bool((streams[:64] != streams[64:]).any()),
             'stream_actions': sorted(set(streams.tolist()))}
    _replicas_disagree(learner.model.policy_head.bias)
    for kind in samplers.SAMPLERS:
        found[kind] = _actions_by_block(kind, learner)
    # A batch that does not split (an evaluation's) acts on the first replica's copy.
    found['uneven'] = sorted(set(learner.act(np.zeros((3, 4), np.float32)).numpy().tolist()))
    try:
        learner.act.on_every_replica(np.zeros((3, 4), np.float32))
        found['uneven_split'] = 'accepted'
    except tf.errors.InvalidArgumentError as error:
        found['uneven_split'] = 'must divide evenly' in str(error)
    print(json.dumps(found))


if __name__ == '__main__':
    main()
