"""TensorFlow's start-up lines are hidden unless asked for; what comes after still prints."""
import os
import subprocess
import sys

import pytest

from common.launch import app
from common.system import quiet_import

_IMPORT = ('from common.launch import process_setup; process_setup.configure(); '
           'import tensorflow as tf, sys; tf.constant(1.0) + 1; '
           'print("after import", file=sys.stderr)')


def _stderr(code, *args, script=None, **environ):
    """stderr of `python -c code args` (or of `python script args`, code written there)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ('TF_CPP_MIN_LOG_LEVEL', quiet_import.QUIET_ENV)}
    env.update(environ, PYTHONPATH=app.PROJECT_ROOT)
    if script is None:
        command = [sys.executable, '-c', code, *args]
    else:
        script.write_text(code)
        command = [sys.executable, str(script), *args]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stderr


@pytest.mark.slow
def test_tensorflow_imports_silently_and_later_errors_still_print():
    assert _stderr(_IMPORT) == 'after import\n'


@pytest.mark.slow
def test_verbose_or_a_log_level_brings_the_start_up_lines_back():
    for stderr in (_stderr(_IMPORT, quiet_import.VERBOSE_FLAG),
                   _stderr(_IMPORT, TF_CPP_MIN_LOG_LEVEL='0')):
        assert stderr.endswith('after import\n')
        assert len(stderr.splitlines()) > 1, stderr  # TensorFlow's own lines came through


def test_stderr_silenced_restores_file_descriptor_2():
    code = ('import os; from common.system import quiet_import\n'
            'with quiet_import.stderr_silenced():\n'
            '    os.write(2, b"hidden\\n")\n'
            'os.write(2, b"shown\\n")')
    assert _stderr(code) == 'shown\n'


def test_wanted_unless_log_level_0_or_verbose():
    assert quiet_import.wanted(environ={}, argv=['main.py'])
    for level in ('1', '2', '3'):
        assert quiet_import.wanted(environ={'TF_CPP_MIN_LOG_LEVEL': level}, argv=['main.py'])
    assert not quiet_import.wanted(environ={'TF_CPP_MIN_LOG_LEVEL': '0'}, argv=['main.py'])
    assert not quiet_import.wanted(environ={}, argv=['main.py', '--verbose'])


@pytest.mark.slow
def test_processes_spawned_by_a_quiet_one_are_quiet_and_a_verbose_ones_log(tmp_path):
    """The A3C-CPU agents import TensorFlow in spawned processes: they follow the parent."""
    code = ('import multiprocessing, sys\n'
            'from common.launch import process_setup\nfrom common.system import processes\n'
            'process_setup.configure()\n'
            'if __name__ == "__main__":\n'
            '    from common.learners import losses  # imports TensorFlow when unpickled\n'
            '    process = multiprocessing.get_context("spawn").Process(\n'
            '        target=losses.n_step_returns, args=([[1.0]], [[0.0]], [0.0], 0.9))\n'
            '    processes.start_process(process); process.join()\n'
            '    assert process.exitcode == 0, process.exitcode\n'
            '    print("after child", file=sys.stderr)')
    script = tmp_path / 'spawns.py'
    assert _stderr(code, script=script) == 'after child\n'
    verbose = _stderr(code, quiet_import.VERBOSE_FLAG, script=script)
    assert verbose.endswith('after child\n') and len(verbose.splitlines()) > 1, verbose


@pytest.mark.slow
def test_a_refused_command_prints_its_one_line_at_every_quiet_log_level(tmp_path):
    """TF_CPP_MIN_LOG_LEVEL 1-3 is how TensorFlow users quiet TensorFlow: the refusal of a gin
    include loop (after TensorFlow loaded) is the only line; a level of 0 or --verbose brings
    TensorFlow's start-up lines back."""
    (tmp_path / 'a.gin').write_text(f"include '{tmp_path / 'b.gin'}'\n")
    (tmp_path / 'b.gin').write_text(f"include '{tmp_path / 'a.gin'}'\n")

    def stderr_lines(*flags, **environ):
        env = {key: value for key, value in os.environ.items()
               if key not in ('TF_CPP_MIN_LOG_LEVEL', quiet_import.QUIET_ENV)}
        env.update(environ, PYTHONPATH=app.PROJECT_ROOT)
        result = subprocess.run(
            [sys.executable, '-m', 'paac_tf.main', f"--gin_file={tmp_path / 'a.gin'}",
             f"--run_dir={tmp_path / 'run'}", *flags],
            capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
        assert result.returncode == 2, result.stderr[-2000:]
        assert result.stderr.splitlines()[-1].startswith('error: gin include loop'), result.stderr
        return len(result.stderr.splitlines())

    assert stderr_lines() == 1
    for level in ('1', '2', '3'):
        assert stderr_lines(TF_CPP_MIN_LOG_LEVEL=level) == 1, level
    assert stderr_lines(TF_CPP_MIN_LOG_LEVEL='0') > 1
    assert stderr_lines(quiet_import.VERBOSE_FLAG) > 1
    assert not (tmp_path / 'run').exists()
