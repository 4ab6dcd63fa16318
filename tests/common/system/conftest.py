"""TensorFlow's GPU device functions faked on this CPU machine, for the tests of which devices a
run's processes compute on (no GPU has run TensorFlow here: docs/gpu.md)."""
import pytest
import tensorflow as tf

from common.system import devices

class FakeGPUs:
    """count GPUs named H100 behind tf.config's device functions (the CPU stays real), with
    what set_visible_devices and set_logical_device_configuration were given."""

    NAME = 'NVIDIA H100 80GB HBM3'

    def __init__(self, monkeypatch, count, built_with_cuda=True):
        self.gpus = [tf.config.PhysicalDevice(f'/physical_device:GPU:{index}', 'GPU')
                     for index in range(count)]
        self.visible = list(self.gpus)
        self.logical = {}
        self.hidden_calls = []
        real_list = tf.config.list_physical_devices

        def list_physical(device_type=None):
            return list(self.gpus) if device_type == 'GPU' else real_list(device_type)

        def set_visible(devices_, device_type=None):
            self.hidden_calls.append((list(devices_), device_type))
            self.visible = list(devices_)

        def set_logical(device, configurations):
            self.logical[device] = list(configurations)

        monkeypatch.setattr(tf.config, 'list_physical_devices', list_physical)
        monkeypatch.setattr(tf.config, 'get_visible_devices',
                            lambda device_type=None: list(self.visible))
        monkeypatch.setattr(tf.config, 'set_visible_devices', set_visible)
        monkeypatch.setattr(tf.config, 'get_logical_device_configuration', self.logical.get)
        monkeypatch.setattr(tf.config, 'set_logical_device_configuration', set_logical)
        monkeypatch.setattr(tf.config.experimental, 'get_device_details',
                            lambda device: {'device_name': self.NAME, 'compute_capability': (9, 0)})
        monkeypatch.setattr(tf.config.experimental, 'get_memory_growth', lambda device: False)
        monkeypatch.setattr(tf.test, 'is_built_with_cuda', lambda: built_with_cuda)


@pytest.fixture
def fake_gpus(monkeypatch):
    """FakeGPUs(count, built_with_cuda=True) behind tf.config for the test, undone after it."""
    return lambda count, built_with_cuda=True: FakeGPUs(monkeypatch, count, built_with_cuda)


@pytest.fixture
def gpu_environment(monkeypatch):
    """A process environment as a GPU machine's: GPUs not hidden, memory growth on."""
    monkeypatch.delenv(devices.VISIBLE_ENV, raising=False)
    monkeypatch.setenv(devices.GROWTH_ENV, 'true')
    return monkeypatch



@pytest.fixture
def driver(fake_driver):
    """An NVIDIA driver on this machine (its /proc file faked), nvidia-smi not on PATH."""
    return fake_driver('NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15\n')
