"""`python -m common.doctor`: on this CPU machine it runs, under a minute, exit 0, with its
sections; with the driver, nvidia-smi and TensorFlow's device functions faked, it names why a
GPU machine's GPUs go unused (a build without CUDA, no CUDA libraries, an old driver) and a GPU
held by another process."""
import os
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from common import doctor
from common.launch import app
from common.system import devices

SMI_HEADER = ['| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4     |']
SMI_GPUS = ['0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559, 70001, 550.54.15',
            '1, GPU-bbbb, NVIDIA H100 80GB HBM3, 81559, 3, 550.54.15']
SMI_APPS = ['GPU-aaaa, 4242, python, 70000']


@pytest.mark.slow
def test_doctor_runs_here_in_under_a_minute_and_prints_its_sections():
    start = time.monotonic()
    result = subprocess.run([sys.executable, '-m', 'common.doctor'], cwd=app.PROJECT_ROOT,
                            capture_output=True, text=True, timeout=180,
                            env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT))
    seconds = time.monotonic() - start
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert seconds < 60, seconds
    lines = result.stdout.splitlines()
    for section in ('TensorFlow', 'NVIDIA driver', 'Devices',
                    'Smoke steps (tiny sizes, on the device a run would use)', 'Verdict'):
        assert section in lines, result.stdout
    text = result.stdout
    assert f'  {tf.__version__} (tf-keras ' in text and '  build: ' in text
    assert f'  CPU: {len(os.sched_getaffinity(0))} usable cores' in text
    assert '  a run prints: compute: CPU, ' in text
    for learner in ('actor-critic update', 'Q-learner update'):
        assert any(line.startswith(f'  {learner}') and ': ok, ' in line
                   and line.endswith(' ms per update on CPU:0') for line in lines), text
    assert lines[-1] == '  ok: the CPU computes', text


@pytest.fixture
def gpu_machine(fake_driver, monkeypatch):
    """A driver (its /proc file faked, no nvidia-smi), GPUs not hidden by the environment."""
    version = fake_driver('NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar 5\n')
    monkeypatch.delenv(devices.VISIBLE_ENV, raising=False)
    return doctor.Driver(where=version, version='550.54.15', cuda='12.4')


def _tensorflow_sees(monkeypatch, gpus, built_with_cuda=True):
    real_list = tf.config.list_physical_devices
    found = [tf.config.PhysicalDevice(f'/physical_device:GPU:{index}', 'GPU')
             for index in range(gpus)]
    monkeypatch.setattr(tf.config, 'list_physical_devices',
                        lambda kind=None: found if kind == 'GPU' else real_list(kind))
    monkeypatch.setattr(tf.test, 'is_built_with_cuda', lambda: built_with_cuda)


def test_a_build_without_cuda_is_named_with_its_install(gpu_machine, monkeypatch):
    _tensorflow_sees(monkeypatch, 0, built_with_cuda=False)
    assert doctor.off_reasons(gpu_machine, {}) == [
        "this TensorFlow is built without CUDA: pip install -e '.[gpu]' installs the CUDA "
        'build']


def test_missing_cuda_libraries_are_named_with_their_install(gpu_machine, monkeypatch):
    _tensorflow_sees(monkeypatch, 0)
    monkeypatch.setattr(doctor, 'package_version', lambda name: None)
    assert doctor.off_reasons(gpu_machine, {'cuda_version': '12.5.1'}) == [
        'TensorFlow finds no GPU (its CUDA libraries are missing, or need a newer driver): '
        "TensorFlow's CUDA libraries (the nvidia-cudnn-cu12 wheels and the others) are not "
        "installed; pip install -e '.[gpu]' installs them"]


def test_a_driver_older_than_tensorflows_cuda_is_named(gpu_machine, monkeypatch):
    _tensorflow_sees(monkeypatch, 0)
    monkeypatch.setattr(doctor, 'package_version', lambda name: '9.3.0.75')
    assert doctor.off_reasons(gpu_machine, {'cuda_version': '12.5.1'}) == [
        'TensorFlow finds no GPU (its CUDA libraries are missing, or need a newer driver): the '
        'driver 550.54.15 runs CUDA up to 12.4, TensorFlow needs 12.5.1; update the NVIDIA '
        'driver']
    gpu_machine.cuda = '12.6'
    assert doctor.off_reasons(gpu_machine, {'cuda_version': '12.5.1'})[0].endswith(
        "--verbose shows TensorFlow's own start-up lines, which name it")


def test_nothing_is_off_with_a_gpu_or_without_a_driver(gpu_machine, monkeypatch, tmp_path):
    _tensorflow_sees(monkeypatch, 1)
    assert doctor.off_reasons(gpu_machine, {}) == []
    _tensorflow_sees(monkeypatch, 0)
    monkeypatch.setattr(devices, 'DRIVER_FILE', str(tmp_path / 'absent'))
    assert doctor.off_reasons(doctor.Driver(), {}) == []


def test_the_driver_and_its_gpus_are_read_from_nvidia_smi(gpu_machine, monkeypatch):
    answers = {(): SMI_HEADER, ('--query-gpu',): SMI_GPUS, ('--query-compute-apps',): SMI_APPS}
    monkeypatch.setattr(doctor, 'nvidia_smi', lambda *args: answers[
        tuple(arg.split('=')[0] for arg in args[:1])])
    driver = doctor.read_driver()
    assert (driver.version, driver.cuda, len(driver.gpus)) == ('550.54.15', '12.4', 2)
    assert driver.apps == [['GPU-aaaa', '4242', 'python', '70000']]


def test_a_gpu_held_by_another_process_is_named():
    driver = doctor.Driver(where='nvidia-smi', gpus=[row.split(', ') for row in SMI_GPUS],
                           apps=[row.split(', ') for row in SMI_APPS])
    assert doctor.held_gpus(driver, own_pid=1) == [
        'GPU 0 (NVIDIA H100 80GB HBM3) is in use by pid 4242 python (70000 MiB): this project '
        'gets what they leave']
    assert doctor.held_gpus(driver, own_pid=4242) == [
        'GPU 0 (NVIDIA H100 80GB HBM3) has 70001 of 81559 MiB in use by processes nvidia-smi '
        "does not show (another container's?)"]


def test_the_report_ends_in_why_and_exit_status_1_when_something_is_off(gpu_machine,
                                                                        monkeypatch):
    _tensorflow_sees(monkeypatch, 0, built_with_cuda=False)
    monkeypatch.setattr(doctor, 'read_driver', lambda: gpu_machine)

    def broken():
        raise RuntimeError('no kernel\nmore')

    monkeypatch.setattr(doctor, 'SMOKE_STEPS', (('probe update', broken),))
    lines = []
    assert doctor.report(lines.append) == 1
    assert lines[lines.index('Verdict') + 1:] == [
        "  off: this TensorFlow is built without CUDA: pip install -e '.[gpu]' installs the "
        'CUDA build',
        '  off: probe update failed: RuntimeError: no kernel']
    assert '  probe update: failed' in lines
    assert '  550.54.15 (' + gpu_machine.where + '), CUDA up to 12.4, 0 GPU(s) listed by ' \
           'nvidia-smi' in lines
