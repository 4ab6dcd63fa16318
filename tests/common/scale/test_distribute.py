"""Synchronous updates on 2 replicas (tf.distribute.MirroredStrategy over 2 logical CPU devices):
A2C, PPO and DQN updates on two half-batches equal one device's updates on the whole batch, and
the replicas hold identical variables; plus the split and the errors."""
import json
import os
import subprocess
import sys

import common  # noqa: F401
import numpy as np
import pytest
import tensorflow as tf

from common.launch import app
from common.scale import distribute


def _fresh_process_json(script):
    """The JSON line a script of this directory prints, run in a fresh process (logical devices
    must be made before TensorFlow makes its devices)."""
    result = subprocess.run(
        [sys.executable, os.path.join(os.path.dirname(__file__), script)],
        env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT), capture_output=True, text=True,
        timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_two_replicas_on_half_batches_update_as_one_device_on_the_whole_batch():
    """3 updates each (PPO: 2 epochs of 2 minibatches per update; DQN: 2 minibatches per call),
    gradients clipped by global norm after the all-reduce; a fresh process, as logical devices
    must be made first."""
    found = _fresh_process_json('mirrored_updates.py')
    assert found['devices'] == ['/device:CPU:0', '/device:CPU:1']
    for algorithm, updates in (('a2c', 3), ('ppo', 3 * 2 * 2), ('dqn', 3 * 2),
                               ('dqn_weighted', 3), ('paac', 3), ('a2c_xla', 3),
                               ('dqn_xla', 3 * 2)):
        measured = found[algorithm]
        assert measured['moved'] > 1e-4, algorithm  # the updates changed the parameters ...
        assert measured['difference'] < 1e-6, (algorithm, measured)  # ... as on one device
        assert measured['replicas'] == 0.0, algorithm  # identical copies
        assert measured['iterations'] == updates, algorithm
        assert measured['outputs'] < 1e-5, (algorithm, measured)  # TD errors, in batch order


@pytest.mark.slow
def test_each_replica_acts_for_its_own_sampler_groups():
    """Stooke & Abbeel's template repeated per replica: the pool holds the sampler's groups for
    each replica, and replica r's copy acts for the r-th block of simulators (its own groups),
    for both samplers; identical copies draw from different streams; a batch that does not split
    acts on the first copy, and a split of it is refused rather than silently cut."""
    found = _fresh_process_json('mirrored_sampling.py')
    assert found['streams_differ'] and found['stream_actions'] == [0, 1]
    for kind, groups in (('synchronized', 2), ('alternating', 4)):
        assert found[kind] == {'groups': groups, 'first_block': [0], 'second_block': [1]}, kind
    assert found['uneven'] == [0] and found['uneven_split'] is True


def test_each_replica_gets_its_equal_share_along_the_axis():
    rollout = tf.reshape(tf.range(2 * 6), (2, 6))
    shares = [distribute.split_for_replica(rollout, 1, replica, 3).numpy() for replica in range(3)]
    np.testing.assert_array_equal(np.concatenate(shares, axis=1), rollout.numpy())
    np.testing.assert_array_equal(shares[1], [[2, 3], [8, 9]])


def test_no_strategy_leaves_gradients_and_functions_alone():
    gradients = [tf.constant([1.0, 2.0])]
    assert distribute.mean_across_replicas(gradients) is gradients
    assert distribute.make_strategy('none', 1) is None
    assert distribute.current_strategy() is None


def test_bad_strategy_and_late_logical_devices_are_named():
    with pytest.raises(ValueError, match="strategy='ring'; allowed: none, mirrored"):
        distribute.make_strategy('ring', 2)
    tf.constant(1.0)  # TensorFlow has made its devices in this process
    with pytest.raises(RuntimeError, match='cannot make 2 logical CPU devices: TensorFlow '
                                           'already made its devices'):
        distribute.use_logical_cpus(2)
