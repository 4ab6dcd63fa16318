"""One worker of the bench row accel/a2c/multi_worker2 (accel_tf/bench_rows.py starts two):
`python -m accel_tf.multi_worker_bench --cluster=... --task_index=i --settings=JSON` trains
gin/accel/a2c_pong.gin on its half of the bench's simulators (DistributeConfig 'multi_worker',
gradients all-reduced between the workers) and prints its timing.measurement() of the run's steps
per second as a last JSON line. Both workers must train equally often (each update waits for the
other's gradients), so they run counts the chief sets, not clocks."""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import dataclasses
import json
import time

from absl import app as absl_app
from absl import flags

import tensorflow as tf

from accel_tf import bench_rows
from accel_tf import kinds
from accel_tf import learners
from common.scale import cluster
from common.scale import distribute
from common.scale import multi_worker
from common.tools import timing
from common.units import on_policy
from common.units import samplers

TRACING_UPDATES = 3   # the first calls trace the update's tf.function
PROBE_UPDATES = 3     # timed to turn the bench's seconds into update counts

flags.DEFINE_string('settings', '{}', "The bench's settings as JSON.")
FLAGS = flags.FLAGS


def _timed_updates(unit, count, steps_per_update):
    chunks = []
    for _ in range(count):
        start = time.perf_counter()
        unit.iterate()
        chunks.append((steps_per_update, time.perf_counter() - start))
    return chunks


def _worker(settings):
    """One worker: the row's training, measured in the run's steps per second."""
    config = bench_rows.configure_row(settings, 'a2c_pong', 'synchronized',
                                      ["DistributeConfig.strategy = 'multi_worker'"])
    config.validate_cluster(len(FLAGS.cluster))
    strategy = distribute.strategy_of(config.distribute)
    learner = kinds.build_learner(config, strategy)
    distribute.broadcast_from_chief(strategy, learner.model.variables)
    share = multi_worker.MachineShare.of(strategy)
    local = dataclasses.replace(config, num_workers=config.num_workers // share.num_machines)
    with learners.open_pool(local, seed=share.env_seed(0, local.num_envs)) as pool:
        unit = on_policy.OnPolicyUnit(
            samplers.make_sampler(config.sampler, pool, config.horizon), learner)
        _timed_updates(unit, TRACING_UPDATES, 0)
        probe = _timed_updates(unit, PROBE_UPDATES, 0)
        seconds_per_update = sum(seconds for _, seconds in probe) / PROBE_UPDATES
        with strategy.scope():
            counts = tf.Variable([settings['warmup_seconds'] / seconds_per_update,
                                  settings['seconds'] / seconds_per_update], dtype=tf.float64)
        distribute.broadcast_from_chief(strategy, [counts])  # the chief's counts for both
        warmup, measured = (max(1, int(round(value))) for value in counts.numpy())
        _timed_updates(unit, warmup, 0)
        chunks = _timed_updates(unit, measured, config.steps_per_update)
    return timing.measurement(chunks)


def main(argv):
    del argv
    cluster.set_cluster(FLAGS.cluster, FLAGS.task_index)
    print(json.dumps(_worker(json.loads(FLAGS.settings))), flush=True)


if __name__ == '__main__':
    cluster.define_flags()
    absl_app.run(main)
