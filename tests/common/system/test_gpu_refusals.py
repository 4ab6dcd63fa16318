"""What a GPU machine's set-up refuses or warns of (common/system/devices.py,
common/scale/distribute.py), with TensorFlow's GPU functions faked (conftest.py): a driver that
TensorFlow cannot use, mirrored replicas past the GPUs, and collectives on shared GPUs."""
import pytest
import tensorflow as tf

from common.launch.config import DistributeConfig
from common.system import devices
from common.system import errors


@pytest.fixture
def driver(fake_driver):
    """An NVIDIA driver on this machine (its /proc file faked), nvidia-smi not on PATH."""
    return fake_driver('NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15\n')


def test_a_driver_without_a_gpu_in_tensorflow_warns_naming_the_gpu_install(fake_gpus, 
        driver, monkeypatch, gpu_environment):
    fake_gpus(0)
    warning = devices.driver_warning()
    assert warning == (f'warning: an NVIDIA driver is installed ({driver}) but TensorFlow finds '
                       'no GPU (its CUDA libraries are missing, or need a newer driver), so this '
                       "computes on the CPU; pip install -e '.[gpu]' installs TensorFlow with "
                       'its CUDA libraries (python -m common.doctor says more)')
    fake_gpus(0, built_with_cuda=False)
    assert 'but this TensorFlow is built without CUDA, so' in devices.driver_warning()
    lines = []
    devices.start_run(log=lines.append)
    assert lines[1] == devices.driver_warning()


def test_no_driver_warning_with_a_gpu_without_a_driver_or_with_gpus_hidden(fake_gpus, 
        driver, monkeypatch, gpu_environment, tmp_path):
    fake_gpus(1)
    assert devices.driver_warning() is None
    fake_gpus(0)
    monkeypatch.setenv(devices.VISIBLE_ENV, '')
    assert devices.driver_warning() is None
    monkeypatch.delenv(devices.VISIBLE_ENV)
    monkeypatch.setattr(devices, 'DRIVER_FILE', str(tmp_path / 'absent'))
    assert devices.driver_warning() is None


def test_mirrored_with_more_replicas_than_gpus_is_refused_in_one_line(fake_gpus, monkeypatch,
                                                                      gpu_environment):
    from common.scale import distribute  # pylint: disable=import-outside-toplevel
    fake = fake_gpus(1)
    expected = ("DistributeConfig.num_replicas=2 with strategy 'mirrored', but 1 GPU visible; "
                "allowed: num_replicas <= 1 (a GPU per replica), or CUDA_VISIBLE_DEVICES='' to "
                'run the replicas on logical CPU devices')
    with pytest.raises(errors.ConfigError) as refused:
        distribute.make_strategy('mirrored', 2)
    assert str(refused.value) == expected
    lines = []
    with pytest.raises(errors.ConfigError, match='num_replicas=2'):
        devices.start_run(distribute_config=DistributeConfig('mirrored', 2), log=lines.append)
    assert lines == [] and fake.hidden_calls == []
    assert devices.mirrored_problem(2, 2) is None and devices.mirrored_problem(2, 0) is None


def test_multi_worker_collectives_use_nccl_only_on_whole_gpus(fake_gpus, monkeypatch):
    from common.scale import distribute  # pylint: disable=import-outside-toplevel
    implementation = tf.distribute.experimental.CommunicationImplementation
    fake = fake_gpus(1)
    assert distribute.collective_implementation() == implementation.NCCL
    fake.logical[fake.gpus[0]] = [tf.config.LogicalDeviceConfiguration(memory_limit=512)] * 2
    assert distribute.collective_implementation() == implementation.RING
    fake.logical.clear()
    fake.visible = []  # physical, but hidden from this process
    assert distribute.collective_implementation() == implementation.RING


def test_a_multi_worker_machine_process_seeing_several_gpus_is_refused_in_one_line(
        fake_gpus, monkeypatch, gpu_environment):
    from common.scale import distribute  # pylint: disable=import-outside-toplevel
    fake = fake_gpus(2)
    expected = ("DistributeConfig.strategy='multi_worker' with 2 GPUs visible to this machine "
                'process; allowed: one GPU per machine process (list a task per GPU in '
                '--cluster and start each with CUDA_VISIBLE_DEVICES naming its GPU), or none')
    lines = []
    with pytest.raises(errors.ConfigError) as refused:
        devices.start_run(distribute_config=DistributeConfig('multi_worker'), log=lines.append)
    assert str(refused.value) == expected and lines == [] and fake.hidden_calls == []
    monkeypatch.setenv('TF_CONFIG', '{"cluster": {"worker": ["localhost:1", "localhost:2"]}, '
                                    '"task": {"type": "worker", "index": 0}}')
    with pytest.raises(errors.ConfigError, match='2 GPUs visible'):
        distribute.make_strategy('multi_worker', 1)
    assert devices.multi_worker_problem(1) is None and devices.multi_worker_problem(0) is None
