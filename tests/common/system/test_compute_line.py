"""The compute line a run prints at its start (common/system/devices.py), with TensorFlow's GPU
functions faked (conftest.py): the GPU, its memory setting, the cores, the learner processes,
GPUs hidden from a main process that does not compute, and the torsos' dtype that
compute_dtype 'auto' picks where the device runs bfloat16 natively."""
import os

import tensorflow as tf

from common.system import devices
from common.system import native_dtype


def test_the_compute_line_names_a_gpu_and_its_memory_setting(fake_gpus, monkeypatch,
                                                             gpu_environment):
    fake = fake_gpus(1)
    assert devices.compute_line() == f'compute: GPU:0 {fake.NAME}, memory growth'
    fake.logical[fake.gpus[0]] = [tf.config.LogicalDeviceConfiguration(memory_limit=512)]
    assert devices.compute_line() == (f'compute: GPU:0 {fake.NAME}, memory limit 512 MB, '
                                      'memory growth')
    monkeypatch.setenv(devices.GROWTH_ENV, 'false')
    del fake.logical[fake.gpus[0]]
    assert devices.compute_line() == (f'compute: GPU:0 {fake.NAME}, no memory growth (its free '
                                      'memory reserved at the first op)')


def test_the_compute_line_on_a_cpu_counts_the_usable_cores(monkeypatch, gpu_environment):
    monkeypatch.setattr(os, 'cpu_count', lambda: 8)
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0, 2, 5}, raising=False)
    assert devices.compute_line() == 'compute: CPU, 3 cores'
    monkeypatch.setenv(devices.VISIBLE_ENV, '')
    assert devices.compute_line() == "compute: CPU, 3 cores (no GPU visible: " \
                                     "CUDA_VISIBLE_DEVICES='')"
    assert devices.compute_line(devices.Placement(learners=2)) == (
        "compute: CPU, 3 cores (2 learner processes; no GPU visible: CUDA_VISIBLE_DEVICES='')")


def test_the_compute_line_of_learner_processes(fake_gpus, monkeypatch, gpu_environment):
    fake = fake_gpus(1)
    shared = devices.compute_line(devices.Placement(learners=2, shared_gpu_memory_mb=2048))
    assert shared == (f'compute: 2 learner processes sharing GPU:0 {fake.NAME}, 2048 MB each, '
                      'memory growth; the main process on the CPU')
    fake.gpus.append(tf.config.PhysicalDevice('/physical_device:GPU:1', 'GPU'))
    own = devices.compute_line(devices.Placement(learners=2))
    assert own == (f'compute: 2 learner processes, one GPU each (GPU:0 {fake.NAME} + GPU:1 '
                   f'{fake.NAME}), memory growth; the main process on the CPU')


def test_a_run_hides_the_gpus_from_a_main_process_that_does_not_compute(fake_gpus, monkeypatch,
                                                                         gpu_environment):
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0, 1}, raising=False)
    fake = fake_gpus(1)
    lines = []
    devices.start_run(devices.Placement(), log=lines.append)
    assert fake.hidden_calls == [] and lines == [f'compute: GPU:0 {fake.NAME}, memory growth']
    lines.clear()
    devices.start_run(devices.Placement(learners=2), log=lines.append)
    assert fake.hidden_calls == [([], 'GPU')]
    assert lines[0].startswith('compute: 2 learner processes sharing GPU:0')
    lines.clear()
    devices.start_run(devices.Placement(cpu_only=True), log=lines.append)
    assert lines == ['compute: CPU, 2 cores (GPUs hidden from every process of this run)']


def test_hiding_the_gpus_too_late_is_a_one_line_warning(fake_gpus, monkeypatch):
    fake_gpus(1)

    def too_late(devices_, device_type=None):
        raise RuntimeError('Visible devices cannot be modified after being initialized')

    monkeypatch.setattr(tf.config, 'set_visible_devices', too_late)
    warning = devices.hide_gpus_here()
    assert warning.startswith('warning: this process had already made its GPU devices')
    assert '\n' not in warning



def test_the_native_dtype_is_bfloat16_only_where_the_device_runs_it():
    assert native_dtype.native_dtype_for(['avx2', 'avx512f']) == (
        'float32', 'no avx512_bf16 or amx_bf16 on this CPU')
    assert native_dtype.native_dtype_for(['avx2', 'avx512f', 'avx512_bf16']) == (
        'bfloat16', 'avx512_bf16 on this CPU')
    assert native_dtype.native_dtype_for(['avx512_bf16', 'amx_bf16', 'amx_tile'])[1] == (
        'avx512_bf16/amx_bf16 on this CPU')
    # A GPU decides, whatever the CPU: every one must be 8.0 or later.
    assert native_dtype.native_dtype_for(['avx512_bf16'], [(7, 5)]) == (
        'float32', 'GPU compute capability 7.5, under 8.0')
    assert native_dtype.native_dtype_for([], [(9, 0), (8, 0)]) == (
        'bfloat16', 'GPU compute capability 8.0')
    assert native_dtype.native_dtype_for([], [(9, 0), (7, 0)])[0] == 'float32'


def test_auto_reads_the_gpus_tensorflow_sees_and_else_the_cpu(fake_gpus, monkeypatch,
                                                              gpu_environment):
    monkeypatch.setattr(devices.machine_load, 'machine_record',
                        lambda: {'cpu_flags': ['avx2', 'avx512f']})
    monkeypatch.setattr(devices, 'nvidia_driver', lambda: None)
    assert native_dtype.native_dtype() == ('float32', 'no avx512_bf16 or amx_bf16 on this CPU')
    fake_gpus(2)  # H100s, compute capability 9.0
    assert native_dtype.native_dtype()[0] == 'float32'  # no driver: TensorFlow is not asked
    monkeypatch.setattr(devices, 'nvidia_driver', lambda: devices.DRIVER_FILE)
    assert native_dtype.native_dtype() == ('bfloat16', 'GPU compute capability 9.0')
    monkeypatch.setenv(devices.VISIBLE_ENV, '')  # the user hid the GPUs: the CPU computes
    assert native_dtype.native_dtype()[0] == 'float32'


def test_the_compute_line_says_what_auto_chose_and_warns_of_emulated_bfloat16(
        monkeypatch, gpu_environment):
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(native_dtype, 'native_dtype',
                        lambda: ('float32', 'no avx512_bf16 or amx_bf16 on this CPU'))
    monkeypatch.setattr(devices, 'driver_warning', lambda: None)
    monkeypatch.setattr(tf.config, 'list_physical_devices',
                        lambda device_type=None: [] if device_type == 'GPU' else ['cpu'])
    lines = []
    devices.start_run(devices.Placement(cpu_only=True), log=lines.append,
                      note=native_dtype.dtype_note('float32', 'auto'))
    assert lines == ["compute: CPU, 2 cores; torsos in float32 (compute_dtype 'auto': no "
                     "avx512_bf16 or amx_bf16 on this CPU)"]
    assert native_dtype.dtype_note('bfloat16', None) == (
        "; torsos in bfloat16, emulated here (no avx512_bf16 or amx_bf16 on this CPU): "
        "compute_dtype 'auto' or 'float32' may be faster")
    assert native_dtype.dtype_note('float32', None) == ''
    monkeypatch.setattr(native_dtype, 'native_dtype', lambda: ('bfloat16', 'avx512_bf16 on this CPU'))
    assert native_dtype.dtype_note('bfloat16', 'auto') == (
        "; torsos in bfloat16 (compute_dtype 'auto': avx512_bf16 on this CPU)")
    assert native_dtype.dtype_note('bfloat16', None) == '; torsos in bfloat16'
