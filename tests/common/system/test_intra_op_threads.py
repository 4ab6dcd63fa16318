"""devices.set_intra_op_threads: TensorFlow's intra-op thread count, set before its runtime starts."""
import os
import subprocess
import sys

import pytest

from common.launch import app

ROOT = app.PROJECT_ROOT


@pytest.mark.slow
def test_set_intra_op_threads_before_tensorflow_starts():
    code = ('import common; from common.system import devices; import tensorflow as tf; '
            'devices.set_intra_op_threads(1); tf.constant(1.0) + 1.0; '
            'print(tf.config.threading.get_intra_op_parallelism_threads())')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=ROOT), check=True)
    assert result.stdout.strip().splitlines()[-1] == '1'
