"""Which dtype this machine's networks compute in natively: what RunConfig.compute_dtype 'auto'
becomes, and what the compute line says of the dtype (emulated bfloat16 is slower, not faster).
"""
from common.system import devices
from common.system import machine_load

# oneDNN's native bfloat16 on a CPU: AVX512_BF16 (Cooper Lake, Zen 4 and later) or AMX (Sapphire
# Rapids and later); elsewhere it emulates bfloat16 through float32 instructions.
NATIVE_BFLOAT16_CPU_FLAGS = ('avx512_bf16', 'amx_bf16')
# A GPU's native bfloat16 (tensor cores): compute capability 8.0 (Ampere) and later.
NATIVE_BFLOAT16_GPU = (8, 0)


def native_dtype_for(cpu_flags, gpu_capabilities=()):
    """(dtype, why) that RunConfig.compute_dtype 'auto' becomes: 'bfloat16' where the device the
    networks compute on runs it natively, 'float32' elsewhere. gpu_capabilities: the (major,
    minor) of each GPU TensorFlow sees ([] : the CPU computes); every one must have it."""
    if gpu_capabilities:
        oldest = min(tuple(capability) for capability in gpu_capabilities)
        if oldest >= NATIVE_BFLOAT16_GPU:
            return 'bfloat16', f'GPU compute capability {oldest[0]}.{oldest[1]}'
        return 'float32', (f'GPU compute capability {oldest[0]}.{oldest[1]}, under '
                           f'{NATIVE_BFLOAT16_GPU[0]}.{NATIVE_BFLOAT16_GPU[1]}')
    native = [flag for flag in NATIVE_BFLOAT16_CPU_FLAGS if flag in cpu_flags]
    if native:
        return 'bfloat16', f'{"/".join(native)} on this CPU'
    return 'float32', f'no {" or ".join(NATIVE_BFLOAT16_CPU_FLAGS)} on this CPU'


def native_dtype():
    """native_dtype_for this machine: its CPU's flags and, where an NVIDIA driver is installed
    and the GPUs are not hidden, the compute capability of each GPU TensorFlow sees (TensorFlow
    is loaded only then)."""
    gpus = []
    if devices.nvidia_driver() is not None and not devices.gpus_hidden_by_user():
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        for gpu in tf.config.list_physical_devices('GPU'):
            try:
                details = tf.config.experimental.get_device_details(gpu)
            except (ValueError, RuntimeError):
                details = {}
            gpus.append(details.get('compute_capability') or (0, 0))
    return native_dtype_for(machine_load.machine_record()['cpu_flags'], gpus)


def dtype_note(compute_dtype, asked):
    """What the compute line adds about the networks' dtype: which one 'auto' chose and why,
    and a warning where bfloat16 is asked of a machine that only emulates it; '' otherwise."""
    if asked == 'auto':
        _, why = native_dtype()
        return f"; torsos in {compute_dtype} (compute_dtype 'auto': {why})"
    if compute_dtype == 'bfloat16':
        native, why = native_dtype()
        if native != 'bfloat16':
            return (f"; torsos in bfloat16, emulated here ({why}): compute_dtype 'auto' or "
                    "'float32' may be faster")
        return '; torsos in bfloat16'
    return ''
