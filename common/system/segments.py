"""Shared-memory segments named after who asked for them, so that a run's main process can remove
every segment of the run, whoever created it, on any ending.

A child SIGKILLed after creating a segment removes nothing, and multiprocessing's resource tracker
removes it (with a warning) only once every process of the run has exited. So create() names each
new segment under this process's prefix; a parent gives each child its own prefix
(child_prefix(), which the child adopt()s, its own children inheriting it through the
environment) and remove()s whatever still carries it once the child is gone; scope() does the
same for a whole run. Linux (/dev/shm) only: elsewhere remove() finds nothing. No TensorFlow.
"""
import contextlib
import itertools
import os
import secrets
from multiprocessing import shared_memory

from common.system import processes

PREFIX_VARIABLE = 'FAST_RL_SHM_PREFIX'
SHM_DIRECTORY = '/dev/shm'
# Random, not the pid: containers sharing /dev/shm reuse pids.
_OWN_PREFIX = f'psm_{secrets.token_hex(4)}_'
_children = itertools.count()


def prefix():
    """The prefix of the segments this process creates: the adopted one, else its own."""
    return os.environ.get(PREFIX_VARIABLE) or _OWN_PREFIX


def child_prefix():
    """A new prefix under this process's, for a child to adopt (unique in this process)."""
    return f'{prefix()}{next(_children)}_'


def adopt(name_prefix):
    """Names what this process, and every process it starts, creates under name_prefix."""
    os.environ[PREFIX_VARIABLE] = name_prefix


def create(size, cls=shared_memory.SharedMemory):
    """A new segment of size bytes named under prefix() (cls: SharedMemory or a subclass)."""
    processes.quiet_resource_tracker()
    while True:
        try:
            return cls(name=prefix() + secrets.token_hex(4), create=True, size=size)
        except FileExistsError:
            continue


def remove(name_prefix):
    """Unlinks every segment whose name starts with name_prefix, and drops it from the resource
    tracker's records (nothing left for it to warn about); call it once every process that
    creates under name_prefix has exited. Returns the names removed."""
    try:
        names = sorted(name for name in os.listdir(SHM_DIRECTORY)
                       if name.startswith(name_prefix))
    except FileNotFoundError:  # no /dev/shm here
        return []
    for name in names:
        try:
            # Attaching records the name with the tracker (if its creator had not) and unlink()
            # withdraws it.
            shm = shared_memory.SharedMemory(name=name)
        except FileNotFoundError:
            continue
        except ValueError:  # empty: its creator died before sizing (and recording) it
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(SHM_DIRECTORY, name))
            continue
        processes.release_shared_memory(shm)
    return names


@contextlib.contextmanager
def scope():
    """Names every segment this process (and the processes it starts) creates in the block
    under a new prefix, and removes whatever still carries it at the end, however it ends."""
    previous = os.environ.get(PREFIX_VARIABLE)
    name_prefix = child_prefix()
    adopt(name_prefix)
    try:
        yield name_prefix
    finally:
        if previous is None:
            os.environ.pop(PREFIX_VARIABLE, None)
        else:
            os.environ[PREFIX_VARIABLE] = previous
        with processes.held_interrupts():
            remove(name_prefix)
