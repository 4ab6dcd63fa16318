"""A carry of fast DQN's Pong preset (the Nature network, its target network and centered
RMSProp's two slots: four copies of 1.69M parameters, 27 MB raw) adds at most 25 MB to the
repository (python -m common.carry). The weights are the initial draws, the slots and the target
filled with values of a trained run's spread: what deflate can find in them is in the bytes of
float32 numbers of that spread, not in training."""
import os

import numpy as np
import pytest

from common.launch import app
from common.run import carry
from common.run import checkpoint as checkpoint_lib
from common.run import run_lock
from common.run import tracker as tracker_lib
from dqn_tf import dqn
from dqn_tf import main as dqn_main

LIMIT_BYTES = 25 * 10 ** 6


@pytest.mark.slow
def test_a_carry_of_the_nature_network_preset_is_at_most_25_mb(tmp_path):
    config = dqn_main.configure([os.path.join(app.PROJECT_ROOT, 'gin', 'dqn', 'pong.gin')], [])
    assert config.network == 'nature'
    learner = dqn.build_learner(config)
    learner.optimizer.build(learner.online.trainable_variables)
    rng = np.random.default_rng(0)
    for variable in learner.target.trainable_variables:  # a target some updates behind
        variable.assign(variable.numpy() + rng.normal(0, 1e-3, variable.shape).astype(np.float32))
    for variable in learner.optimizer.variables:
        if variable.dtype.is_floating and variable.shape.rank:
            variable.assign(np.abs(rng.normal(0, 1e-4, variable.shape)).astype(np.float32))
    parameters = sum(int(np.prod(v.shape)) for v in learner.online.trainable_variables)
    assert 1.6e6 < parameters < 1.8e6  # the Nature network on 84x84x4, 6 actions
    run_dir = str(tmp_path / 'run')
    app.prepare_run_dir(run_dir, {'paper': 'dqn'}, {'paper': 'dqn'})
    tracker = tracker_lib.RunTracker(
        run_dir, total_steps=10, log_every_seconds=60, checkpoint_every_steps=10,
        trackables={'online': learner.online, 'target': learner.target,
                    'optimizer': learner.optimizer})
    tracker.add_steps(10)
    raw = os.path.getsize(tracker.save() + '.data-00000-of-00001')
    tracker.close()
    run_lock.release(run_dir)
    assert raw > 4 * parameters * 4  # online, target and two slots, float32
    manifest = carry.write(run_dir, str(tmp_path / 'carried'))
    size = sum(entry['bytes'] for entry in manifest['files'].values())
    size += os.path.getsize(tmp_path / 'carried' / carry.MANIFEST)
    assert size <= LIMIT_BYTES, f'{size:,} bytes ({raw:,} raw)'
    assert size < 0.93 * raw  # less than deflate of the raw checkpoint (git's own packing)
    assert checkpoint_lib.first_readable(os.path.join(run_dir, 'checkpoints'))
