"""TensorFlow's start-up lines are hidden unless asked for; what comes after still prints."""
import os
import subprocess
import sys

from common import app
from common import quiet_import

_IMPORT = ('import common, tensorflow as tf, sys; tf.constant(1.0) + 1; '
           'print("after import", file=sys.stderr)')


def _stderr(code, *args, **environ):
    env = {key: value for key, value in os.environ.items() if key != 'TF_CPP_MIN_LOG_LEVEL'}
    env.update(environ, PYTHONPATH=app.PROJECT_ROOT)
    result = subprocess.run([sys.executable, '-c', code, *args], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_tensorflow_imports_silently_and_later_errors_still_print():
    assert _stderr(_IMPORT) == 'after import\n'


def test_verbose_or_a_log_level_brings_the_start_up_lines_back():
    for stderr in (_stderr(_IMPORT, quiet_import.VERBOSE_FLAG),
                   _stderr(_IMPORT, TF_CPP_MIN_LOG_LEVEL='0')):
        assert stderr.endswith('after import\n')
        assert len(stderr.splitlines()) > 1, stderr  # TensorFlow's own lines came through


def test_stderr_silenced_restores_file_descriptor_2():
    code = ('import os; from common import quiet_import\n'
            'with quiet_import.stderr_silenced():\n'
            '    os.write(2, b"hidden\\n")\n'
            'os.write(2, b"shown\\n")')
    assert _stderr(code) == 'shown\n'


def test_wanted_only_without_a_log_level_or_verbose():
    assert quiet_import.wanted(environ={}, argv=['main.py'])
    assert not quiet_import.wanted(environ={'TF_CPP_MIN_LOG_LEVEL': '0'}, argv=['main.py'])
    assert not quiet_import.wanted(environ={}, argv=['main.py', '--verbose'])
