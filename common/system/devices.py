"""Which devices a run's processes compute on, set once per run (entry.launch -> start_run) and per
child process (child_setup), before TensorFlow makes its devices.

TensorFlow's default breaks every design with more than one TensorFlow process per GPU: each
process makes a device on every GPU it sees and reserves nearly all of its free memory at its
first op. So, through the environment that every process of a run inherits:
  - memory growth: TF_FORCE_GPU_ALLOW_GROWTH=true (TensorFlow's own switch, "Use a GPU" guide),
    set by every entry point's process_setup, so a process takes GPU memory as it needs it;
  - which GPUs a child sees: processes.start_process(process, gpus=...) hands CUDA_VISIBLE_DEVICES
    to that child alone, applied by its child_setup before TensorFlow loads: NO_GPU for one that
    computes on the CPU (A3C-CPU agents, bench rows that only step simulators), a GPU's id for a
    learner process of its own (Stooke & Abbeel 2018, section 4.3: a learner per GPU).
Learner processes that share a GPU bound their memory with a logical device (limit_gpu_memory);
the main process of a run whose learners compute elsewhere hides its GPUs (start_run). No
TensorFlow at import (child_setup and processes import this); the functions that read devices
import it.
"""
import collections
import contextlib
import dataclasses
import os
import shutil
import threading

from absl import logging

from common.system import errors
from common.system import machine_load

VISIBLE_ENV = 'CUDA_VISIBLE_DEVICES'
GROWTH_ENV = 'TF_FORCE_GPU_ALLOW_GROWTH'
# Set by a parent for the one child it starts (child_gpus), made that child's VISIBLE_ENV by
# its child_setup: the parent's own CUDA, if it is still starting, never reads it.
CHILD_GPUS_ENV = 'COMMON_CHILD_GPUS'
NO_GPU = ''  # CUDA_VISIBLE_DEVICES of a process that must see no GPU
DRIVER_FILE = '/proc/driver/nvidia/version'
INSTALL_GPU = "pip install -e '.[gpu]'"
# Each learner's memory where A3C/APPO learners share a GPU: the papers' networks (nature at
# most) on APPO's 2048-frame batches need a few hundred MB of activations, and cuDNN's
# workspaces some more; two learners then fit any GPU of 10 GB or more. Not measured on a GPU.
SHARED_GPU_MEMORY_MB = 4096

_START_LOCK = threading.Lock()


def configure_environment(environ=os.environ):
    """Memory growth for every TensorFlow process of a run (this one and all it starts), unless
    the user set TF_FORCE_GPU_ALLOW_GROWTH; called by process_setup before TensorFlow loads."""
    environ.setdefault(GROWTH_ENV, 'true')


def apply_child_gpus(environ=os.environ):
    """In a spawned child, before TensorFlow loads: the GPUs its parent chose for it (child_gpus)
    become its CUDA_VISIBLE_DEVICES, which its own children then inherit."""
    gpus = environ.pop(CHILD_GPUS_ENV, None)
    if gpus is not None:
        environ[VISIBLE_ENV] = gpus


@contextlib.contextmanager
def child_gpus(gpus):
    """Spawned children started in the block (through processes.start_process, whose child_setup
    applies it) see the GPUs gpus names: NO_GPU for none, '1' or '0,1' for those of this
    process's CUDA ids (gpu_ids), None for this process's own. One start at a time: a spawned
    child copies os.environ when it starts."""
    if gpus is not None and not isinstance(gpus, str):
        raise ValueError(f'gpus={gpus!r}; allowed: None (the parent\'s GPUs), {NO_GPU!r} (none) '
                         "or CUDA ids such as '0' or '0,1'")
    with _START_LOCK:
        if gpus is None:
            yield
            return
        os.environ[CHILD_GPUS_ENV] = gpus
        try:
            yield
        finally:
            os.environ.pop(CHILD_GPUS_ENV, None)


def gpu_ids(environ=os.environ):
    """The CUDA ids of the GPUs TensorFlow finds here, in its order (GPU:i is ids[i]): what a
    child can be given. Physical devices: GPUs this process hid from itself with tf.config alone
    (start_run) stay its children's to use."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    count = len(tf.config.list_physical_devices('GPU'))
    listed = environ.get(VISIBLE_ENV)
    if listed is None:
        return [str(index) for index in range(count)]
    return [entry.strip() for entry in listed.split(',') if entry.strip()][:count]


@dataclasses.dataclass(frozen=True)
class LearnerGPU:
    """What one learner process is started with: visible, its CUDA_VISIBLE_DEVICES (None: the
    parent's, on a machine without GPUs); memory_limit_mb, its GPU memory where it shares the
    GPU with other learners (None: alone on it, memory growth only)."""
    visible: str | None
    memory_limit_mb: int | None


def learner_gpus(num_actor_learners, shared_memory_mb=SHARED_GPU_MEMORY_MB, ids=None):
    """Each learner's GPU: learner i on GPU i where there are as many GPUs as learners, else
    learner i on GPU i modulo the GPUs, with shared_memory_mb each where several share one.
    ids: the GPUs' CUDA ids (default: gpu_ids())."""
    ids = gpu_ids() if ids is None else list(ids)
    if not ids:
        return [LearnerGPU(None, None) for _ in range(num_actor_learners)]
    sharing = collections.Counter(index % len(ids) for index in range(num_actor_learners))
    return [LearnerGPU(ids[index % len(ids)],
                       shared_memory_mb if sharing[index % len(ids)] > 1 else None)
            for index in range(num_actor_learners)]


def limit_gpu_memory(memory_limit_mb):
    """In a process that shares its GPU, before any op: one logical device of memory_limit_mb
    on each GPU it sees (tf.config.set_logical_device_configuration); None: no limit."""
    if memory_limit_mb is None:
        return
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    for gpu in tf.config.list_physical_devices('GPU'):
        tf.config.set_logical_device_configuration(
            gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=memory_limit_mb)])


def hide_gpus_here():
    """Keeps this process off its GPUs (it makes no GPU device, so holds no GPU memory), before
    TensorFlow makes its devices; a one-line warning if it already had, else None."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    if not tf.config.list_physical_devices('GPU'):
        return None
    try:
        tf.config.set_visible_devices([], 'GPU')
    except RuntimeError as error:
        return (f'warning: this process had already made its GPU devices ({error}); it keeps '
                'them')
    return None


@dataclasses.dataclass(frozen=True)
class Placement:
    """Which of a run's processes compute (entry.Paper.compute says it for a config): the main
    process (learners 0, the default); learners > 0 learner processes, each on a GPU of its own
    or sharing one with shared_gpu_memory_mb each, while the main process only counts and
    checkpoints, on the CPU; cpu_only: every process on the CPU, GPUs hidden (a CPU baseline)."""
    learners: int = 0
    shared_gpu_memory_mb: int = SHARED_GPU_MEMORY_MB
    cpu_only: bool = False


def describe_gpu(gpu):
    """'GPU:0 NVIDIA H100 80GB HBM3' for a physical GPU (its name where TensorFlow gives one)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    try:
        details = tf.config.experimental.get_device_details(gpu)
    except (ValueError, RuntimeError):
        details = {}
    label = gpu.name.split('physical_device:')[-1]
    model = details.get('device_name')
    return f'{label} {model}' if model else label


def growth_on(gpu=None, environ=os.environ):
    """Whether a GPU's memory grows as needed: TF_FORCE_GPU_ALLOW_GROWTH overrides tf.config."""
    value = environ.get(GROWTH_ENV)
    if value in ('true', 'false') or gpu is None:
        return value == 'true'
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    return bool(tf.config.experimental.get_memory_growth(gpu))


def memory_setting(gpu, environ=os.environ):
    """How a GPU's memory is taken: its logical devices' limits, and growth or not."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    limits = [device.memory_limit for device in tf.config.get_logical_device_configuration(gpu)
              or () if device.memory_limit]
    parts = [f'memory limit {" + ".join(f"{limit} MB" for limit in limits)}'] if limits else []
    parts.append('memory growth' if growth_on(gpu, environ) else
                 'no memory growth (its free memory reserved at the first op)')
    return ', '.join(parts)


def _plural(count, noun):
    return f'{count} {noun}{"" if count == 1 else "es" if noun.endswith("s") else "s"}'


def compute_line(placement=Placement(), environ=os.environ):
    """'compute: ...', what a run with this placement computes on, e.g. 'compute: GPU:0 NVIDIA
    H100 80GB HBM3, memory growth' or 'compute: CPU, 2 cores' (the cores it may use)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    cpu = f'CPU, {_plural(machine_load.usable_cores(), "core")}'
    physical = tf.config.list_physical_devices('GPU')
    hidden = f'no GPU visible: {VISIBLE_ENV}={environ[VISIBLE_ENV]!r}' if (
        not physical and VISIBLE_ENV in environ) else ''

    def on_cpu(*notes):
        notes = [note for note in notes if note]
        return f'compute: {cpu}' + (f' ({"; ".join(notes)})' if notes else '')

    if placement.cpu_only:
        return on_cpu('GPUs hidden from every process of this run' if physical else hidden)
    if placement.learners:
        learners = _plural(placement.learners, 'learner process')
        if not physical:
            return on_cpu(learners, hidden)
        assigned = learner_gpus(placement.learners, placement.shared_gpu_memory_mb,
                                gpu_ids(environ))
        used = physical[:min(placement.learners, len(physical))]
        names = ' + '.join(describe_gpu(gpu) for gpu in used)
        growth = 'memory growth' if growth_on(None, environ) else 'no memory growth'
        limits = {learner.memory_limit_mb for learner in assigned} - {None}
        share = (f' sharing {names}, {limits.pop()} MB each' if limits
                 else f', one GPU each ({names})')
        return f'compute: {learners}{share}, {growth}; the main process on the CPU'
    visible = tf.config.get_visible_devices('GPU')
    if not visible:
        return on_cpu('GPUs hidden from this process' if physical else hidden)
    settings = [memory_setting(gpu, environ) for gpu in visible]
    if len(set(settings)) == 1:
        return f'compute: {" + ".join(describe_gpu(gpu) for gpu in visible)}, {settings[0]}'
    return 'compute: ' + ' + '.join(f'{describe_gpu(gpu)} ({setting})'
                                    for gpu, setting in zip(visible, settings))


def nvidia_driver():
    """Where this machine shows an NVIDIA driver (DRIVER_FILE, or nvidia-smi on PATH), or None."""
    if os.path.exists(DRIVER_FILE):
        return DRIVER_FILE
    return shutil.which('nvidia-smi')


def gpus_hidden_by_user(environ=os.environ):
    """Whether CUDA_VISIBLE_DEVICES hides every GPU ('' or '-1')."""
    return environ.get(VISIBLE_ENV, 'unset').strip() in ('', '-1')


def gpu_off_reason(environ=os.environ):
    """Why TensorFlow computes on the CPU on a machine with an NVIDIA driver, in a few words (a
    build without CUDA, or no GPU found); None where it has a GPU, where there is no driver, or
    where the user hid the GPUs."""
    if nvidia_driver() is None or gpus_hidden_by_user(environ):
        return None
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    if not tf.test.is_built_with_cuda():
        return 'this TensorFlow is built without CUDA'
    if not tf.config.list_physical_devices('GPU'):
        return ('TensorFlow finds no GPU (its CUDA libraries are missing, or need a newer '
                'driver)')
    return None


def driver_warning(environ=os.environ):
    """One line where this machine has an NVIDIA driver but TensorFlow computes on the CPU,
    naming the install that fixes it; None otherwise."""
    reason = gpu_off_reason(environ)
    if reason is None:
        return None
    return (f'warning: an NVIDIA driver is installed ({nvidia_driver()}) but {reason}, so this '
            f'computes on the CPU; {INSTALL_GPU} installs TensorFlow with its CUDA libraries '
            '(python -m common.doctor says more)')


def mirrored_problem(num_replicas, num_gpus):
    """One line refusing a 'mirrored' run of more replicas than visible GPUs (at least one),
    None where each replica has a GPU or there is none (logical CPU devices). Refused rather
    than run on logical CPU devices while the GPUs idle, or on a GPU split into logical ones,
    whose replicas would share one GPU's compute and need a memory limit each."""
    if 0 < num_gpus < num_replicas:
        return (f"DistributeConfig.num_replicas={num_replicas} with strategy 'mirrored', but "
                f'{_plural(num_gpus, "GPU")} visible; allowed: num_replicas <= {num_gpus} (a '
                f"GPU per replica), or {VISIBLE_ENV}='' to run the replicas on logical CPU "
                'devices')
    return None


def multi_worker_problem(num_gpus):
    """One line refusing a multi-worker machine process that sees several GPUs, None for one or
    none. Such a process would act on one local copy while its other GPUs idle, and split its
    batch over them, which no test covers; one process per GPU (a task each in the cluster)
    samples on every GPU, as a localhost cluster's machines do (multi_worker.localhost_gpus)."""
    if num_gpus > 1:
        return (f"DistributeConfig.strategy='multi_worker' with {num_gpus} GPUs visible to this "
                f'machine process; allowed: one GPU per machine process (list a task per GPU in '
                f'--cluster and start each with {VISIBLE_ENV} naming its GPU), or none')
    return None


def prefetch_device(strategy=None):
    """Where a tf.data input for computation under strategy prefetches its next batch: the one
    GPU that computation runs on (no strategy: TensorFlow's first GPU; a strategy of one replica:
    its device, if a GPU), else None, the host: a strategy over several replicas splits each
    batch over them, so a batch copied to the first GPU would be copied on again from there."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    if strategy is not None:
        local = list(strategy.extended.worker_devices)
        return local[0] if len(local) == 1 and ':GPU:' in local[0].upper() else None
    gpus = tf.config.list_logical_devices('GPU')
    return gpus[0].name if gpus else None


def prefetched(dataset, size, device):
    """dataset prefetching size elements onto device (prefetch_device), or on the host."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    if device is None:
        return dataset.prefetch(size)
    return dataset.apply(tf.data.experimental.prefetch_to_device(device, size))


def _print_line(line):
    print(line, flush=True)


def start_run(placement=None, distribute_config=None, log=_print_line, note=''):
    """A run's device set-up in its main process, once, before anything runs a TensorFlow op:
    refuses a mirrored config with more replicas than GPUs and a multi-worker machine process
    that sees several GPUs (errors.ConfigError), hides the GPUs from a main process that only
    coordinates or must stay on the CPU, and prints the compute line with note at its end
    (native_dtype.dtype_note), and the driver warning where TensorFlow misses the GPUs."""
    placement = placement or Placement()
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    strategy = distribute_config.strategy if distribute_config is not None else 'none'
    num_gpus = len(tf.config.get_visible_devices('GPU'))
    problem = (mirrored_problem(distribute_config.num_replicas, num_gpus)
               if strategy == 'mirrored' else
               multi_worker_problem(num_gpus) if strategy == 'multi_worker' else None)
    if problem:
        raise errors.ConfigError(problem)
    if placement.learners or placement.cpu_only:
        warning = hide_gpus_here()
        if warning:
            log(warning)
    log(compute_line(placement) + note)
    warning = driver_warning()
    if warning:
        log(warning)


def set_intra_op_threads(num_threads):
    """Sets TensorFlow's intra-op thread count (0: TF's default, every core) for this process.

    TF fixes it when its runtime starts; if that already happened (several runs in one process,
    as in the tests) the count in effect stays and a warning says so.
    """
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    if tf.config.threading.get_intra_op_parallelism_threads() == num_threads:
        return
    try:
        tf.config.threading.set_intra_op_parallelism_threads(num_threads)
    except RuntimeError:
        logging.warning('TensorFlow already started: intra-op threads stay at %d, not %d',
                        tf.config.threading.get_intra_op_parallelism_threads(), num_threads)


def seed_exact():
    """TensorFlow's deterministic ops for a seed-exact run (RunConfig.seed_exact), before any op
    runs: the same kernels in the same order, and an error for an op that has no deterministic
    kernel rather than a silent difference."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    tf.config.experimental.enable_op_determinism()
