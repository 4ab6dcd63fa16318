"""Several machines' code path on localhost: two worker processes under
tf.distribute.MultiWorkerMirroredStrategy, each training on its own half of every batch, end with
identical variables equal to one process's on the whole batches; a worker that dies makes the
other fail within a bounded time instead of hanging."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from common.launch import app
from common.scale import cluster

SCRIPT = os.path.join(os.path.dirname(__file__), 'multi_worker_updates.py')
ENV = dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)


def _free_ports(count):
    try:
        return ','.join(str(port) for port in cluster.free_ports(count))
    except OSError as error:
        pytest.skip(f'no free localhost port to bind: {error}')


def _start_workers(tmp_path, extra=()):
    ports = _free_ports(2)
    return [subprocess.Popen([sys.executable, SCRIPT, str(index), ports,
                              str(tmp_path / f'worker{index}.npz')] + list(extra),
                             env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for index in range(2)]


def _finish(workers, timeout):
    outputs = []
    try:
        for worker in workers:
            outputs.append(worker.communicate(timeout=timeout))
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    return outputs


def _weights(path):
    with np.load(path) as saved:
        return [saved[f'arr_{index}'] for index in range(len(saved.files) - 1)], \
            int(saved['iterations'])


@pytest.mark.slow
def test_two_workers_on_half_batches_end_equal_to_one_process_on_the_whole(tmp_path):
    """3 updates of A2C (gradients clipped after the all-reduce); worker 1 starts from
    perturbed weights, which the chief's broadcast replaces."""
    workers = _start_workers(tmp_path)
    single = subprocess.run([sys.executable, SCRIPT, 'single', str(tmp_path / 'single.npz')],
                            env=ENV, capture_output=True, text=True, timeout=240)
    outputs = _finish(workers, timeout=240)
    assert single.returncode == 0, single.stderr[-3000:]
    for worker, (_, stderr) in zip(workers, outputs):
        assert worker.returncode == 0, stderr[-3000:]
    reference, updates = _weights(tmp_path / 'single.npz')
    for index in range(2):
        weights, iterations = _weights(tmp_path / f'worker{index}.npz')
        assert iterations == updates == 3
        for got, want in zip(weights, reference):
            np.testing.assert_allclose(got, want, atol=1e-6)
    first, second = (_weights(tmp_path / f'worker{index}.npz')[0] for index in range(2))
    assert all(np.array_equal(a, b) for a, b in zip(first, second))  # identical copies


@pytest.mark.slow
def test_a_dead_worker_makes_the_other_fail_within_bounded_time(tmp_path):
    started = time.monotonic()
    workers = _start_workers(tmp_path, ['1'])  # worker 1 exits after one update
    outputs = _finish(workers, timeout=120)
    assert workers[1].returncode == 0
    assert workers[0].returncode == 1, outputs[0][1][-3000:]
    assert 'worker 0: UnavailableError' in outputs[0][0], outputs[0]
    assert time.monotonic() - started < 120


def test_bad_clusters_are_named():
    with pytest.raises(ValueError, match="cluster machine 'localhost' is not host:port"):
        cluster.set_cluster(['localhost'], 0)
    with pytest.raises(ValueError, match='task_index=2; allowed: 0 to 1 for 2 machines'):
        cluster.set_cluster(['a:1', 'b:2'], 2)


def test_tf_config_is_read_and_checked(monkeypatch):
    monkeypatch.setenv('TF_CONFIG', '')  # restored (or removed) after the test
    assert cluster.from_environment() is None
    cluster.set_cluster(['a:1', 'b:2'], 1)
    assert cluster.from_environment() == (['a:1', 'b:2'], 1)
    own = ('{"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 0}, '
           '"rpc_layer": "grpc"}')
    monkeypatch.setenv('TF_CONFIG', own)
    assert cluster.from_environment() == (['a:1', 'b:2'], 0)
    assert os.environ['TF_CONFIG'] == own  # read, not rewritten
    monkeypatch.setenv('TF_CONFIG', '{"cluster": {"worker": ["a:1"], "ps": ["b:2"]}, '
                                    '"task": {"type": "worker", "index": 0}}')
    with pytest.raises(ValueError, match="only a 'worker' job is supported"):
        cluster.from_environment()
    monkeypatch.setenv('TF_CONFIG', 'workers a and b')
    with pytest.raises(ValueError, match="TF_CONFIG='workers a and b' is not"):
        cluster.from_environment()
    monkeypatch.setenv('TF_CONFIG', '')
    assert cluster.resolve('none') is None
    with pytest.raises(ValueError, match="--cluster and --task_index need DistributeConfig"):
        cluster.resolve('mirrored', ['a:1'], 0)
    with pytest.raises(ValueError, match="needs --cluster and --task_index"):
        cluster.resolve('multi_worker')
    with pytest.raises(ValueError, match="give both --cluster"):
        cluster.resolve('multi_worker', ['a:1', 'b:2'])
    assert cluster.resolve('multi_worker', ['a:1', 'b:2'], 1) == (['a:1', 'b:2'], 1)
