"""prefetch_device: a tf.data input prefetches onto the one GPU its computation runs on, else on
the host (several replicas split each batch: a copy to the first GPU would be copied on again)."""
import types

import numpy as np
import tensorflow as tf

from common.replay import replay as replay_lib
from common.replay import replay_feed
from common.system import devices

GPU = '/job:localhost/replica:0/task:0/device:GPU:{}'


def _strategy(*names):
    return types.SimpleNamespace(extended=types.SimpleNamespace(worker_devices=tuple(names)))


def test_the_one_gpu_of_the_computation_or_the_host(monkeypatch):
    assert devices.prefetch_device(_strategy(GPU.format(0))) == GPU.format(0)
    assert devices.prefetch_device(_strategy(GPU.format(0), GPU.format(1))) is None
    assert devices.prefetch_device(_strategy('/job:localhost/replica:0/task:0/device:CPU:0')) \
        is None
    # No strategy: TensorFlow places the computation on its first GPU, if it sees one.
    gpus = [tf.config.LogicalDevice(GPU.format(index), 'GPU') for index in range(2)]
    real = tf.config.list_logical_devices
    monkeypatch.setattr(tf.config, 'list_logical_devices',
                        lambda kind=None: gpus if kind == 'GPU' else real(kind))
    assert devices.prefetch_device() == GPU.format(0)
    monkeypatch.setattr(tf.config, 'list_logical_devices',
                        lambda kind=None: [] if kind == 'GPU' else real(kind))
    assert devices.prefetch_device() is None


def test_a_dataset_prefetched_onto_a_device_or_the_host_yields_the_same():
    dataset = tf.data.Dataset.from_tensor_slices(np.arange(6))
    cpu = tf.config.list_logical_devices('CPU')[0].name
    for device in (None, cpu):
        assert [int(value) for value in devices.prefetched(dataset, 2, device)] == list(range(6))


def test_the_replay_feed_prefetches_where_it_is_told(monkeypatch):
    placed = []
    real = devices.prefetched

    def recording(dataset, size, device):
        placed.append(device)
        return real(dataset, size, device)
    monkeypatch.setattr(devices, 'prefetched', recording)
    replay = replay_lib.ReplayMemory(64, (6, 5, 4), np.uint8, stack=4, num_streams=1, seed=0)
    rng = np.random.default_rng(0)
    replay.add_steps(0, rng.integers(0, 255, (40, 6, 5), dtype=np.uint8),
                     np.zeros(40, np.int32), np.ones(40, np.float32), np.zeros(40, bool),
                     np.zeros(40, bool))
    cpu = tf.config.list_logical_devices('CPU')[0].name
    for device in (cpu, None):
        feed = replay_feed.make_feed('tf_data', replay, 1, 8, device=device)
        assert tuple(feed.draw()[0].shape) == (1, 8, 6, 5, 4)
        feed.close()
    assert placed == [cpu, None]
