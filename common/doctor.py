"""`python -m common.doctor`: what this machine gives the project, in under a minute.

Prints the TensorFlow build (CUDA or not, its versions, the CUDA libraries it would load), the
NVIDIA driver, the devices and their memory settings, the usable cores, the compute line a run
would print, a few-update smoke step of each learner (actor-critic, Q-learner, at tiny sizes) on
the device a run would use, and where something is off on a GPU machine, one line saying why
(a build without CUDA, a driver but no GPU found, a GPU held by another process). Exit status 0
when nothing is off, 1 otherwise. `--verbose` shows TensorFlow's own start-up lines (e.g. which
CUDA library it could not load).
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import dataclasses
import importlib.metadata
import os
import platform
import re
import subprocess
import time

from common.launch import app
from common.system import devices
from common.system import machine_load

# The CUDA libraries TensorFlow's [and-cuda] extra installs, by the one it cannot run convs
# without (setup.py's 'gpu' extra).
CUDNN_WHEEL = 'nvidia-cudnn-cu12'
# Memory another process holds on a GPU before this one starts that is worth a line (MiB).
HELD_MIB = 1024
SMOKE_UPDATES = 3


def package_version(name):
    """The installed version of a distribution, or None."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def nvidia_smi(*args):
    """nvidia-smi's output lines for args, [] where it is missing or fails (within 20 s)."""
    try:
        result = subprocess.run(['nvidia-smi', *args], capture_output=True, text=True,
                                timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return result.stdout.splitlines() if result.returncode == 0 else []


def _csv(lines):
    return [[field.strip() for field in line.split(',')] for line in lines if line.strip()]


@dataclasses.dataclass
class Driver:
    """What this machine shows of an NVIDIA driver (nothing where there is none)."""
    where: str | None = None       # its /proc file or nvidia-smi
    version: str | None = None
    cuda: str | None = None        # the newest CUDA it runs, from nvidia-smi's header
    gpus: list = dataclasses.field(default_factory=list)  # [index, uuid, name, total, used] MiB
    apps: list = dataclasses.field(default_factory=list)  # [gpu_uuid, pid, name, used] MiB


def read_driver():
    """The driver, its GPUs and the processes computing on them, before this process touches
    any GPU (so what it shows in use is others')."""
    driver = Driver(where=devices.nvidia_driver())
    if driver.where is None:
        return driver
    try:
        with open(devices.DRIVER_FILE) as f:
            found = re.search(r'Kernel Module\s+(\S+)', f.read())
            driver.version = found.group(1) if found else None
    except OSError:
        pass
    header = re.search(r'CUDA Version:\s*([\d.]+)', '\n'.join(nvidia_smi()))
    driver.cuda = header.group(1) if header else None
    driver.gpus = _csv(nvidia_smi('--query-gpu=index,uuid,name,memory.total,memory.used,'
                                  'driver_version', '--format=csv,noheader,nounits'))
    if driver.gpus and driver.version is None:
        driver.version = driver.gpus[0][-1]
    driver.apps = _csv(nvidia_smi('--query-compute-apps=gpu_uuid,pid,process_name,used_memory',
                                  '--format=csv,noheader,nounits'))
    return driver


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _version_tuple(text):
    return tuple(int(part) for part in re.findall(r'\d+', text or '')[:2])


def held_gpus(driver, own_pid=None):
    """One line per GPU that another process holds memory of (nvidia-smi's compute apps, or
    where it lists none, e.g. from another container, the memory in use)."""
    own_pid = os.getpid() if own_pid is None else own_pid
    lines = []
    for gpu in driver.gpus:
        if len(gpu) < 5:
            continue
        index, uuid, name, total, used = gpu[:5]
        others = [app_ for app_ in driver.apps if len(app_) >= 4 and app_[0] == uuid
                  and app_[1] != str(own_pid)]
        if others:
            held = ', '.join(f'pid {pid} {process} ({memory} MiB)'
                             for _, pid, process, memory in (app_[:4] for app_ in others))
            lines.append(f'GPU {index} ({name}) is in use by {held}: this project gets what '
                         'they leave')
        elif (_number(used) or 0) >= HELD_MIB:
            lines.append(f'GPU {index} ({name}) has {used} of {total} MiB in use by processes '
                         "nvidia-smi does not show (another container's?)")
    return lines


def off_reasons(driver, build_info, environ=os.environ):
    """The one-line reasons this machine's GPUs go unused, [] where nothing is off (or where
    there is no driver: a CPU machine)."""
    reason = devices.gpu_off_reason(environ)
    if reason is None:
        return []
    if 'without CUDA' in reason:
        return [f'{reason}: {devices.INSTALL_GPU} installs the CUDA build']
    if package_version(CUDNN_WHEEL) is None:
        return [f"{reason}: TensorFlow's CUDA libraries (the {CUDNN_WHEEL} wheels and the "
                f'others) are not installed; {devices.INSTALL_GPU} installs them']
    needed, runs = build_info.get('cuda_version'), driver.cuda
    if needed and runs and _version_tuple(runs) < _version_tuple(needed):
        return [f'{reason}: the driver {driver.version or ""} runs CUDA up to {runs}, '
                f'TensorFlow needs {needed}; update the NVIDIA driver']
    return [f"{reason}; --verbose shows TensorFlow's own start-up lines, which name it"]


def _device_of(variable):
    return variable.device.split('device:')[-1] or '?'


def _timed(step, updates=SMOKE_UPDATES):
    """Milliseconds per call of step() over updates calls, after one untimed (tracing) call;
    step returns a tensor, read back so the time includes the device's work."""
    step().numpy()
    start = time.perf_counter()
    for _ in range(updates):
        result = step()
    result.numpy()
    return (time.perf_counter() - start) / updates * 1000


def actor_critic_smoke():
    """A few actor-critic updates (nips network, a 2-step rollout of 4 Atari frames stacks);
    returns (ms per update, device of its weights)."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from common.learners import actor_critic  # pylint: disable=import-outside-toplevel
    from common.learners import networks  # pylint: disable=import-outside-toplevel
    from common.learners import optim  # pylint: disable=import-outside-toplevel
    shape, actions, horizon, envs = (84, 84, 4), 6, 2, 4
    model = networks.make_actor_critic(actions, shape, np.uint8, network='nips')
    learner = actor_critic.ActorCriticLearner(
        model, optim.RMSProp(7e-4), actor_critic.LossSettings(
            gamma=0.99, entropy_coef=0.01, value_loss_coef=0.5, clip_norm=40.0),
        tf.TensorSpec((None,) + shape, tf.uint8), horizon=horizon)
    rng = np.random.default_rng(0)
    rollout = (rng.integers(0, 256, (horizon + 1, envs) + shape, dtype=np.uint8),
               rng.integers(0, actions, (horizon, envs), dtype=np.int32),
               rng.standard_normal((horizon, envs)).astype(np.float32),
               np.zeros((horizon, envs), np.float32))

    def step():
        learner.train_on_rollout(*rollout)
        return model.trainable_variables[0]

    return _timed(step), _device_of(model.trainable_variables[0])


def q_learner_smoke():
    """A few Q-learner updates (nature network, double DQN, a batch of 8 frame stacks);
    returns (ms per update, device of its weights)."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from common.learners import networks  # pylint: disable=import-outside-toplevel
    from common.learners import q_learner  # pylint: disable=import-outside-toplevel
    shape, actions, batch = (84, 84, 4), 6, 8
    learner = q_learner.QLearner(
        lambda: networks.make_q_network(actions, shape, np.uint8, network='nature'), actions,
        q_learner.centered_rmsprop(2.5e-4, decay=0.95, epsilon=0.01),
        q_learner.QSettings(gamma=0.99, double_dqn=True),
        tf.TensorSpec((None,) + shape, tf.uint8))
    rng = np.random.default_rng(0)
    minibatch = (rng.integers(0, 256, (batch,) + shape, dtype=np.uint8),
                 rng.integers(0, actions, batch, dtype=np.int32),
                 rng.standard_normal(batch).astype(np.float32),
                 rng.integers(0, 256, (batch,) + shape, dtype=np.uint8),
                 np.zeros(batch, np.float32))

    def step():
        return learner.train_step(*minibatch)

    return _timed(step), _device_of(learner.online.trainable_variables[0])


SMOKE_STEPS = (('actor-critic update (nips network, 2 steps x 4 envs)', actor_critic_smoke),
               ('Q-learner update (nature network, batch 8)', q_learner_smoke))


def report(out=print, environ=os.environ):
    """Prints the sections; returns the exit status (1 where something is off)."""
    driver = read_driver()  # before TensorFlow can touch a GPU
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    build = dict(tf.sysconfig.get_build_info())
    off = []
    out('TensorFlow')
    out(f'  {tf.__version__} (tf-keras {package_version("tf-keras") or "not installed"}), '
        f'Python {platform.python_version()}')
    if tf.test.is_built_with_cuda():
        wheels = package_version(CUDNN_WHEEL)
        out(f"  build: CUDA {build.get('cuda_version', '?')}, cuDNN "
            f"{build.get('cudnn_version', '?')}; its CUDA libraries as wheels: "
            f"{f'{CUDNN_WHEEL} {wheels}' if wheels else 'none installed'}")
    else:
        out('  build: without CUDA (CPU only)')
    out('NVIDIA driver')
    if driver.where is None:
        out(f'  none found (no {devices.DRIVER_FILE}, no nvidia-smi on PATH): a CPU machine')
    else:
        out(f"  {driver.version or 'version unknown'} ({driver.where}), CUDA up to "
            f"{driver.cuda or '?'}, {len(driver.gpus)} GPU(s) listed by nvidia-smi")
    out('Devices')
    gpus = tf.config.list_physical_devices('GPU')
    for gpu in gpus:
        try:
            capability = tf.config.experimental.get_device_details(gpu).get(
                'compute_capability')
        except (ValueError, RuntimeError):
            capability = None
        capability = f', compute capability {".".join(map(str, capability))}' if (
            capability) else ''
        out(f'  {devices.describe_gpu(gpu)}{capability}, {devices.memory_setting(gpu, environ)}')
    if not gpus:
        hidden = (f' ({devices.VISIBLE_ENV}={environ[devices.VISIBLE_ENV]!r})'
                  if devices.VISIBLE_ENV in environ else '')
        out(f'  no GPU{hidden}')
    out(f'  CPU: {machine_load.usable_cores()} usable cores (of {os.cpu_count()}), oneDNN '
        f"kernels {'off' if environ.get('TF_ENABLE_ONEDNN_OPTS') == '0' else 'on'}")
    out(f'  a run prints: {devices.compute_line(environ=environ)}')
    out('Smoke steps (tiny sizes, on the device a run would use)')
    for name, smoke in SMOKE_STEPS:
        try:
            milliseconds, device = smoke()
        except Exception as error:  # pylint: disable=broad-except
            lines = str(error).strip().splitlines()
            off.append(f'{name} failed: {type(error).__name__}: {lines[0] if lines else ""}')
            out(f'  {name}: failed')
            continue
        out(f'  {name}: ok, {milliseconds:.1f} ms per update on {device}')
    off = off_reasons(driver, build, environ) + off
    notes = held_gpus(driver)
    if driver.where is not None and devices.gpus_hidden_by_user(environ):
        notes.append(f"the GPUs are hidden from TensorFlow ({devices.VISIBLE_ENV}="
                     f"{environ[devices.VISIBLE_ENV]!r}): everything computes on the CPU")
    out('Verdict')
    for line in off:
        out(f'  off: {line}')
    for line in notes:
        out(f'  note: {line}')
    if not off:
        out('  ok: ' + ('a GPU computes' if tf.config.get_visible_devices('GPU')
                        else 'the CPU computes'))
    return 1 if off else 0


def main():
    return report(lambda line: print(line, flush=True))


if __name__ == '__main__':
    app.execute(main)
