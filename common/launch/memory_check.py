"""Refuses, before any process starts, a config whose memory would not fit this machine: a typo
such as 100,000 environments for 1,000 would otherwise start its workers and end in swap or the
OOM killer. Each paper's entry point estimates what its config holds (entry.Paper.memory: the
TensorFlow processes, the worker processes, the emulators and their frames, rollouts, replay);
the sizes below were measured on this project's machines (2026-11-28)."""
import numpy as np

from absl import flags

from common.system import errors

__all__ = ('Need', 'TF_PROCESS_BYTES', 'WORKER_PROCESS_BYTES', 'EMULATOR_BYTES',
           'observation_bytes', 'frame_bytes', 'replay_need', 'available_bytes', 'check',
           'define_flags')

MIB, GIB = 1 << 20, 1 << 30
TF_PROCESS_BYTES = 800 * MIB     # a process that imported TensorFlow (PAAC's main: 775 MB RSS)
WORKER_PROCESS_BYTES = 80 * MIB  # a worker stepping environments without it (80 MB RSS)
EMULATOR_BYTES = 1 * MIB         # one ALE game and its frame buffers (0.8 MB each, 64 measured)
ITEM_BYTES = 16                  # replay's per-step action, reward and flags


class Need:
    """What part of a run holds how many bytes, and the knob that sets it (None: fixed)."""

    def __init__(self, what, num_bytes, knob=None):
        self.what, self.bytes, self.knob = what, int(num_bytes), knob


def observation_bytes(env_config):
    """Bytes of one observation (uint8 Atari frames stacked; float32 for a gymnasium env)."""
    itemsize = 1 if hasattr(env_config, 'game') else 4
    return int(np.prod(env_config.observation_shape)) * itemsize


def frame_bytes(env_config):
    """Bytes replay stores per step: one frame of the stack (each frame once), or a whole
    observation where there is no stack."""
    shape = env_config.observation_shape
    stack = getattr(env_config, 'stack', 1) or 1
    return observation_bytes(env_config) // stack if len(shape) == 3 else \
        observation_bytes(env_config)


def replay_need(knob, capacity, env_config):
    """A replay of capacity steps of env_config's frames (stored once each), set by knob."""
    return Need(f'replay of {capacity:,} steps', capacity * (frame_bytes(env_config) + ITEM_BYTES),
                knob)


def available_bytes():
    """Memory this process may still take: MemAvailable of /proc/meminfo, capped by the cgroup's
    limit less its usage where one is set (a container's /proc/meminfo shows the host's); None
    where neither can be read."""
    found = []
    try:
        with open('/proc/meminfo') as f:
            for line in f:
                if line.startswith('MemAvailable:'):
                    found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open('/sys/fs/cgroup/memory.max') as f:
            limit = f.read().strip()
        if limit != 'max':
            with open('/sys/fs/cgroup/memory.current') as f:
                found.append(int(limit) - int(f.read().strip()))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def _gib(num_bytes):
    return f'{num_bytes / GIB:,.1f} GiB'


def check(needs, available=None):
    """ConfigError in one line when the needs add up to more than the memory available (given, or
    available_bytes()), naming the total, the largest parts with their knobs, and how to go on
    anyway; nothing when they fit or the memory cannot be read."""
    available = available_bytes() if available is None else available
    total = sum(need.bytes for need in needs)
    if available is None or total <= available:
        return
    largest = sorted(needs, key=lambda need: need.bytes, reverse=True)[:3]
    parts = '; '.join(f'{need.what}: {_gib(need.bytes)}' + (f' ({need.knob})' if need.knob else '')
                      for need in largest)
    knobs = [need.knob for need in largest if need.knob]
    raise errors.ConfigError(
        f'this config needs about {_gib(total)} of memory ({parts}) and this machine has '
        f'{_gib(available)} available; lower {knobs[0] if knobs else "the config"}, or pass '
        '--skip_memory_check to go on anyway (a machine with swap)')



def define_flags():
    """--skip_memory_check in absl's registry, once (entry.main calls it)."""
    if 'skip_memory_check' not in flags.FLAGS:
        flags.DEFINE_boolean('skip_memory_check', False, 'Start even when the config looks '
                             'larger than the memory available (a machine with swap).')


def check_flags(needs):
    """check(needs) unless --skip_memory_check (or the flag is not defined: a library call)."""
    if 'skip_memory_check' in flags.FLAGS and flags.FLAGS['skip_memory_check'].value:
        return
    check(needs)
