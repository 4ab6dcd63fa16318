"""`import common` changes nothing in a library user's process; the entry points set it up."""
import json
import os
import subprocess
import sys

import pytest

from common.launch import app
from common.launch import process_setup
from common.system import quiet_import

_SET_BY_SETUP = ('TF_USE_LEGACY_KERAS', 'TF_ENABLE_ONEDNN_OPTS', 'TF_CPP_MIN_LOG_LEVEL',
                 quiet_import.QUIET_ENV)


def _run(code):
    env = {key: value for key, value in os.environ.items() if key not in _SET_BY_SETUP}
    env['PYTHONPATH'] = app.PROJECT_ROOT
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            env=env, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.slow
def test_importing_the_shared_layer_and_building_a_model_changes_no_process_state():
    seen = _run(
        'import json, os, sys\n'
        # The libraries first: what they do to the process is theirs (TensorFlow sets
        # TF2_BEHAVIOR and more).
        'import absl.flags, ale_py, cv2, gin, gymnasium, numpy, tensorflow, tf_keras\n'
        'environ, meta_path = dict(os.environ), list(sys.meta_path)\n'
        'import common, paac_tf, dqn_tf, ga3c_tf, accel_tf\n'
        'from common.learners import networks\n'
        'from common.units import on_policy\n'
        'from common.replay import replay\n'
        'model = networks.ActorCriticNetwork(networks.make_torso("mlp", (4,)), 2)\n'
        'logits, values = model(networks.tf.zeros((3, 4)))\n'
        'print(json.dumps({"environ_changed": sorted(set(os.environ.items()) ^ '
        'set(environ.items())), "meta_path_same": sys.meta_path == meta_path, '
        '"shapes": [logits.shape.as_list(), values.shape.as_list()]}))')
    assert seen == {'environ_changed': [], 'meta_path_same': True, 'shapes': [[3, 2], [3]]}


@pytest.mark.slow
def test_an_entry_point_sets_keras_onednn_and_the_quiet_import_before_tensorflow_loads():
    seen = _run(
        'import json, os, sys\n'
        'import paac_tf.main\n'
        'print(json.dumps({key: os.environ.get(key) for key in %r}))' % (_SET_BY_SETUP,))
    assert seen == {'TF_USE_LEGACY_KERAS': '1', 'TF_ENABLE_ONEDNN_OPTS': '1',
                    'TF_CPP_MIN_LOG_LEVEL': '2', quiet_import.QUIET_ENV: '1'}


def test_configure_keeps_what_the_user_set():
    environ = {'TF_ENABLE_ONEDNN_OPTS': '0', 'TF_CPP_MIN_LOG_LEVEL': '0'}
    process_setup.configure(environ, argv=['main.py'])
    assert environ['TF_ENABLE_ONEDNN_OPTS'] == '0'
    assert environ['TF_CPP_MIN_LOG_LEVEL'] == '0' and quiet_import.QUIET_ENV not in environ
    assert environ['TF_USE_LEGACY_KERAS'] == '1'
