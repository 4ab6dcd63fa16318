"""Imports TensorFlow with its C++ start-up lines (oneDNN, CUDA probing, CPU features) silenced.

TensorFlow writes them through absl's C++ logging before it is initialized, which
TF_CPP_MIN_LOG_LEVEL does not reach, so the only way to hide them is to point file descriptor 2
at /dev/null while TensorFlow loads and probes its devices. Installed by every entry point
(common/launch/process_setup.py) and the workers it spawns (child_setup.py) unless the user set
TF_CPP_MIN_LOG_LEVEL=0 or passed --verbose (a level of 1-3 asks for less logging, so it is quiet
too); workers that never import TensorFlow pay nothing.
"""
import contextlib
import importlib.abc
import importlib.util
import os
import sys

VERBOSE_FLAG = '--verbose'


@contextlib.contextmanager
def stderr_silenced():
    """Points file descriptor 2 at /dev/null for the block (Python's sys.stderr included)."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


class _QuietLoader(importlib.abc.Loader):
    """Runs TensorFlow's own loader with stderr silenced, then lists its devices (the CUDA
    probe and its messages) while still silenced."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        with stderr_silenced():
            self._loader.exec_module(module)
            module.config.list_physical_devices()

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _QuietTensorFlowFinder(importlib.abc.MetaPathFinder):
    """Finds `tensorflow` the usual way, once, and hands it to _QuietLoader."""

    def find_spec(self, name, path, target=None):
        if name != 'tensorflow':
            return None
        uninstall()
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


_FINDER = _QuietTensorFlowFinder()


# Set in the environment by a process that chose to be quiet, so that the processes it spawns
# (which inherit its TF_CPP_MIN_LOG_LEVEL but not its argv) are quiet too.
QUIET_ENV = 'COMMON_QUIET_TENSORFLOW'


# The one level that asks for TensorFlow's start-up logs: its INFO lines (oneDNN, CPU features).
VERBOSE_LEVEL = '0'


def wanted(environ=os.environ, argv=sys.argv):
    """Silence unless the user asked for TensorFlow's logs (TF_CPP_MIN_LOG_LEVEL=0 or --verbose);
    a level of 1-3 (how TensorFlow users quiet TensorFlow) is quiet, and so is a process spawned
    by a quiet one."""
    if environ.get(QUIET_ENV) == '1':
        return True
    return (environ.get('TF_CPP_MIN_LOG_LEVEL', '').strip() != VERBOSE_LEVEL
            and VERBOSE_FLAG not in argv)


def configure(environ=os.environ, argv=sys.argv):
    """Installs the quiet import (and marks the environment for child processes) or, when the
    user asked for the logs, lets child processes log too. A level the user set is kept."""
    if wanted(environ, argv):
        environ[QUIET_ENV] = '1'
        environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
        install()
    else:
        environ.setdefault('TF_CPP_MIN_LOG_LEVEL', VERBOSE_LEVEL)


def install():
    if 'tensorflow' not in sys.modules and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall():
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
