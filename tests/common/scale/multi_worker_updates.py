"""Run by tests/common/scale/test_multi_worker.py as one of two worker processes on localhost:
`python multi_worker_updates.py TASK_INDEX PORT0,PORT1 OUT.npz [die_after]`, or as the single
process they are compared with: `python multi_worker_updates.py single OUT.npz`. Each builds the A2C
learner under tf.distribute.MultiWorkerMirroredStrategy (the non-chief perturbs its copy, which
the chief's broadcast must undo), then trains UPDATES synchronous updates on its own half of a
fixed rollout (worker i: simulators 2i and 2i+1) and saves its variables. With die_after, worker
1 exits without a word after that many updates; worker 0 must then fail, not hang."""
import os
import sys
import time

import numpy as np

from common.scale import cluster

SINGLE = sys.argv[1] == 'single'
if not SINGLE:
    TASK_INDEX = int(sys.argv[1])
    cluster.set_cluster([f'localhost:{port}' for port in sys.argv[2].split(',')], TASK_INDEX)

import common  # noqa: E402,F401
import tensorflow as tf  # noqa: E402

from common.scale import distribute  # noqa: E402

STRATEGY = None if SINGLE else distribute.make_strategy('multi_worker', 2)

from common.learners import actor_critic  # noqa: E402
from common.learners import networks  # noqa: E402
from common.learners import optim  # noqa: E402

T, N, UPDATES = 5, 4, 3
SPEC = tf.TensorSpec((None, 4), tf.float32)


class CartPoleShape:
    observation_shape = (4,)
    observation_dtype = np.float32

    @staticmethod
    def num_actions():
        return 2


def build_learner():
    """The learner both the workers and the test's single process build (same seed)."""
    model = networks.actor_critic_for(CartPoleShape(), 'mlp', seed=0,
                                      torso_kwargs={'hidden_sizes': (16,)})
    settings = actor_critic.LossSettings(gamma=0.99, entropy_coef=0.01, value_loss_coef=0.5,
                                         clip_norm=0.05)
    return actor_critic.ActorCriticLearner(
        model, optim.RMSProp(0.01, decay=0.99, epsilon=1e-5), settings, SPEC, seed=0, horizon=T)


def rollout(update):
    """The whole batch of update `update`: (T + 1, N) observations, (T, N) the rest."""
    rng = np.random.default_rng(update)
    return (rng.normal(size=(T + 1, N, 4)).astype(np.float32),
            rng.integers(0, 2, (T, N)).astype(np.int32), rng.normal(size=(T, N)).astype(np.float32),
            (rng.random((T, N)) < 0.2).astype(np.float32))


def single(out_path):
    learner = build_learner()
    for update in range(UPDATES):
        learner.train_on_rollout(*rollout(update))
    np.savez(out_path, *learner.model.get_weights(),
             iterations=learner.optimizer.iterations.numpy())
    return 0


def main():
    if SINGLE:
        return single(sys.argv[2])
    die_after = int(sys.argv[4]) if len(sys.argv) > 4 else None
    with STRATEGY.scope():
        learner = build_learner()
    if not distribute.is_chief(STRATEGY):
        learner.model.set_weights([weight + 1.0 for weight in learner.model.get_weights()])
    distribute.broadcast_from_chief(STRATEGY, learner.model.variables)
    half = slice(2 * TASK_INDEX, 2 * TASK_INDEX + 2)
    start = time.monotonic()
    try:
        for update in range(UPDATES if die_after is None else 1000):
            if die_after is not None and TASK_INDEX == 1 and update == die_after:
                os._exit(0)
            learner.train_on_rollout(*[field[:, half] for field in rollout(update)])
    except tf.errors.OpError as error:
        print(f'worker {TASK_INDEX}: {type(error).__name__} after '
              f'{time.monotonic() - start:.1f} s', flush=True)
        return 1
    np.savez(sys.argv[3], *learner.model.get_weights(),
             iterations=learner.optimizer.iterations.numpy())
    return 0


if __name__ == '__main__':
    sys.exit(main())
