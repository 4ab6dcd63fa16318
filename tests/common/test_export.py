"""common.export writes a run's policy as a SavedModel that a process without this package loads
and runs, acting and valuing as the package's own network does."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from common import evaluate
from common import export
from common.launch import app
from common.run import checkpoint as checkpoint_lib
from common.system import errors

# Loads each SavedModel with TensorFlow alone (no project path, no legacy-Keras switch) and runs
# it on the saved inputs; fails if anything of the project was imported.
FRESH_PROCESS = '''
import json, sys
import numpy as np
import tensorflow as tf
cases = json.loads(sys.argv[1])
outputs = {}
for name, case in cases.items():
    policy = tf.saved_model.load(case['dir'])
    observations = np.load(case['inputs'])
    for key, value in policy.act(tf.constant(observations)).items():
        outputs[f'{name}/{key}'] = value.numpy()
    signature = policy.signatures['serving_default']
    outputs[f'{name}/signature_action'] = signature(observations=tf.constant(observations))[
        'action'].numpy()
np.savez(sys.argv[2], **outputs)
project = [m for m in sys.modules if m.split('.')[0] in (
    'common', 'paac_tf', 'dqn_tf', 'ga3c_tf', 'accel_tf', 'tf_keras', 'gin')]
assert not project, project
print('ok')
'''


@pytest.fixture(scope='module')
def q_run(tmp_path_factory):
    """A copy of the accel_dqn checkpoint fixture: a CartPole DQN of Stooke & Abbeel's preset
    made by its entry point (tests/fixtures/make_checkpoints.py), for the Q-value head."""
    run_dir = tmp_path_factory.mktemp('q') / 'run'
    shutil.copytree(os.path.join(app.PROJECT_ROOT, 'tests', 'fixtures', 'checkpoints',
                                 'accel_dqn'), run_dir)
    return str(run_dir)


def _in_package(run_dir, observations):
    """The package's own greedy actions and network outputs on observations."""
    _, policy, _ = evaluate.load_policy(run_dir, greedy=True)
    outputs = policy.network(observations)
    if policy.head == 'logits':
        logits, values = outputs
        return {'action': policy(observations), 'logits': logits.numpy(),
                'value': values.numpy()}
    return {'action': policy(observations), 'q_values': outputs.numpy()}


@pytest.mark.slow
def test_a_fresh_tensorflow_process_acts_as_the_package(cartpole_run, pong_run, q_run,
                                                        tmp_path):
    rng = np.random.default_rng(0)
    inputs = {'cartpole': rng.normal(size=(6, 4)).astype(np.float32),
              'q': rng.normal(size=(6, 4)).astype(np.float32),
              'pong': rng.integers(0, 256, size=(6, 104, 80, 4), dtype=np.uint8)}
    runs = {'cartpole': cartpole_run, 'q': q_run, 'pong': pong_run}
    cases = {}
    # Pong through the command (absl, one line), the others through the library.
    result = subprocess.run(
        [sys.executable, '-m', 'common.export', f'--run_dir={pong_run}',
         f'--out={tmp_path / "pong"}'], cwd=tmp_path, capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT), timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == (
        f'wrote {tmp_path / "pong"}: a SavedModel of the policy at step 20; act(observations '
        'uint8 [batch, 104, 80, 4]) -> action, logits, value')
    for name in ('cartpole', 'q'):
        export.export(runs[name], str(tmp_path / name))
    for name, observations in inputs.items():
        np.save(tmp_path / f'{name}.npy', observations)
        cases[name] = {'dir': str(tmp_path / name), 'inputs': str(tmp_path / f'{name}.npy')}
    env = {key: value for key, value in os.environ.items()
           if key not in ('PYTHONPATH', 'TF_USE_LEGACY_KERAS')}
    fresh = subprocess.run([sys.executable, '-c', FRESH_PROCESS, json.dumps(cases),
                            str(tmp_path / 'outputs.npz')], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
    assert fresh.returncode == 0 and fresh.stdout.strip() == 'ok', fresh.stderr[-3000:]
    loaded = np.load(tmp_path / 'outputs.npz')
    for name, observations in inputs.items():
        expected = _in_package(runs[name], observations)
        keys = {key.split('/', 1)[1] for key in loaded.files if key.startswith(f'{name}/')}
        assert keys == set(expected) | {'signature_action'}, name
        for key, value in expected.items():
            np.testing.assert_allclose(loaded[f'{name}/{key}'], value, rtol=1e-5, atol=1e-6,
                                       err_msg=f'{name}/{key}')
        np.testing.assert_array_equal(loaded[f'{name}/signature_action'], expected['action'])
        assert loaded[f'{name}/action'].dtype == np.int32
    # What the run trained with, and how to feed the model, travel with it.
    with open(tmp_path / 'pong' / 'assets.extra' / 'policy.json') as f:
        description = json.load(f)
    assert description['observation_shape'] == [104, 80, 4]
    assert description['observation_dtype'] == 'uint8'
    assert description['ale_actions'] == [0, 1, 3, 4, 11, 12]  # Pong's minimal action set
    assert description['outputs'] == ['action', 'logits', 'value']
    assert {'run.json', 'operative_config.gin'} <= set(
        os.listdir(tmp_path / 'pong' / 'assets.extra'))


def test_an_export_replaces_an_earlier_one_and_nothing_else(cartpole_run, tmp_path):
    out = tmp_path / 'model'
    export.export(cartpole_run, str(out))
    (out / 'stale.txt').write_text('from before')
    export.export(cartpole_run, str(out))
    assert not (out / 'stale.txt').exists() and (out / export.SAVED_MODEL_FILE).exists()
    other = tmp_path / 'notes'
    other.mkdir()
    (other / 'mine.txt').write_text('keep')
    with pytest.raises(errors.ConfigError, match=r"--out='.*notes' is a file or a non-empty "
                                              r'directory that holds no SavedModel; allowed'):
        export.export(cartpole_run, str(other))
    assert (other / 'mine.txt').read_text() == 'keep'


def test_a_run_without_a_policy_is_named(cartpole_run, tmp_path):
    bare = tmp_path / 'bare'
    shutil.copytree(cartpole_run, bare, ignore=shutil.ignore_patterns(
        checkpoint_lib.CHECKPOINT_DIR, 'run.lock'))
    with pytest.raises(checkpoint_lib.CheckpointError,
                       match=rf"'{bare}' has no checkpoint .* allowed: a run directory"):
        export.export(str(bare), str(tmp_path / 'out'))
    assert not (tmp_path / 'out').exists()
