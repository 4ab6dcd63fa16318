"""The environment-only rate of this machine, measured once per boot and recorded with each
session's machine (run.json): one Atari emulator stepped with random actions for up to 10 s,
its steps per CPU second, so a run's time can be told apart as code or machine (the CPUs here
emulate 2-4x apart). Per CPU second, not per wall second: a probe beside other work still
measures the emulator; the 1-minute load at the probe says how busy the machine was."""
import hashlib
import json
import os
import time

import gin
import numpy as np

from common.envs import atari
from common.system import file_writes
from common.system import machine_load

CACHE_DIR = os.path.join(os.path.expanduser('~'), '.cache', 'fast-rl-tf')


@gin.configurable('env_probe')
def probe_seconds(seconds=10.0):
    """How long a probe steps (wall seconds); 0 records none."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
        from common.system import errors  # pylint: disable=import-outside-toplevel
        raise errors.ConfigError(f'env_probe.seconds={seconds!r}; allowed: a number >= 0 '
                                 '(0: no probe)')
    return float(seconds)


def probe(env_config, seconds):
    """Steps one environment of env_config with uniformly random actions (a fixed seed) for
    `seconds` of wall time; its steps, wall and CPU seconds and rates."""
    env = env_config.make(seed=0)
    num_actions = env_config.num_actions()
    rng = np.random.default_rng(0)
    steps, load = 0, machine_load.load_average()
    try:
        env.reset()
        wall, cpu = time.perf_counter(), time.process_time()
        while time.perf_counter() - wall < seconds:
            for _ in range(100):
                *_, done = env.step(int(rng.integers(num_actions)))
                if done:
                    env.reset()
            steps += 100
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        env.close()
    return {'game': env_config.game, 'variant': env_config.variant, 'env_steps': steps,
            'wall_seconds': round(wall, 3), 'cpu_seconds': round(cpu, 3),
            'env_steps_per_cpu_second': round(steps / max(cpu, 1e-9), 1),
            'env_steps_per_sec': round(steps / max(wall, 1e-9), 1), 'load_1m': load}


def _boot_id():
    try:
        with open('/proc/sys/kernel/random/boot_id') as f:
            return f.read().strip()
    except OSError:
        return 'unknown-boot'


def session_probe(env_config, cache_dir=CACHE_DIR):
    """This boot's probe of env_config's frames (measured on first use, then read from
    cache_dir), or None for an environment that is not an Atari game or when
    env_probe.seconds = 0."""
    seconds = probe_seconds()
    if not isinstance(env_config, atari.AtariConfig) or seconds == 0:
        return None
    # What sets the rate: the machine, the game and how frames are made (not no-op starts,
    # caps or seeds), so runs of one game on one boot share a probe.
    key = json.dumps({'boot': _boot_id(), 'seconds': seconds, 'machine':
                      machine_load.machine_record(), 'env': [
                          env_config.game, env_config.variant, env_config.frame_skip,
                          env_config.resize, env_config.downsample]}, sort_keys=True)
    path = os.path.join(cache_dir, f'env_probe-{hashlib.sha256(key.encode()).hexdigest()[:16]}'
                                   '.json')
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        pass
    print(f'probing the environment-only rate ({env_config.game}, {seconds:g} s; once per boot)')
    result = probe(env_config, seconds)
    try:
        os.makedirs(cache_dir, exist_ok=True)
        file_writes.write_json(path, result)
    except OSError:
        pass  # an unwritable cache only means the next run probes again
    return result
