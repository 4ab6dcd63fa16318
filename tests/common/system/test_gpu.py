"""The GPU paths, on a machine where TensorFlow sees a GPU:
`FAST_RL_TEST_GPU=1 python -m pytest -m gpu tests` (skipped elsewhere; tests/conftest.py). Each
fresh process inherits the GPU mode's TF32 off and deterministic kernels. Covered: memory growth
in an entry point's process, the GPUs children are started with, a shared learner's memory
limit, an A3C run whose main process leaves the GPU to its two learners, the A3C-CPU baseline
with every GPU hidden, mirrored replicas on GPUs (and the refusal of more replicas than GPUs),
two localhost workers on a GPU each (NCCL), and the doctor. Written by construction: no GPU has
run them yet (docs/gpu.md)."""
import json
import multiprocessing
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from common.launch import app
from common.scale import cluster
from common.scale import distribute
from common.scale import multi_worker
from common.system import devices
from common.system import errors
from common.system import processes
from common.tools import run_files

pytestmark = pytest.mark.gpu

ENV = dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)
# The scripts tests/common/scale/ runs in fresh processes, run here on real GPUs.
SCALE_SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'scale')


def _python(code, env=None, timeout=300):
    """The JSON line a fresh Python process running code prints last."""
    result = subprocess.run([sys.executable, '-c', code], cwd=app.PROJECT_ROOT, capture_output=True,
                            text=True, timeout=timeout, env=dict(ENV, **(env or {})))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _gpu_count():
    return len(tf.config.list_physical_devices('GPU'))


def test_an_entry_points_process_computes_on_the_gpu_with_memory_growth():
    """The GPU's used memory grows by what the process needs, not by all of it."""
    if shutil.which('nvidia-smi') is None:
        pytest.skip('nvidia-smi is needed to see the GPU memory in use')
    found = _python(
        'from common.launch import process_setup\n'
        'process_setup.configure()\n'
        'import json, subprocess\n'
        'def used():\n'
        "    out = subprocess.run(['nvidia-smi', '--query-gpu=memory.used,memory.total', "
        "'--format=csv,noheader,nounits', '--id=' + first], capture_output=True, text=True)\n"
        "    return [float(value) for value in out.stdout.split(',')]\n"
        'import os\n'
        "first = (os.environ.get('CUDA_VISIBLE_DEVICES') or '0').split(',')[0]\n"
        'before, total = used()\n'
        'import tensorflow as tf\n'
        'from common.system import devices\n'
        'y = tf.matmul(tf.ones((512, 512)), tf.ones((512, 512)))\n'
        'after, _ = used()\n'
        "print(json.dumps({'line': devices.compute_line(), 'device': y.device, "
        "'grown': after - before, 'total': total}))")
    assert found['line'].startswith('compute: GPU:0') and found['line'].endswith('memory growth')
    assert found['device'].endswith('GPU:0')
    assert found['grown'] < found['total'] / 2, found


def _visible_gpus(queue):
    import tensorflow as tf_  # pylint: disable=import-outside-toplevel,reimported
    queue.put(len(tf_.config.list_physical_devices('GPU')))


@pytest.mark.parametrize('own', [False, True])
def test_a_child_sees_no_gpu_or_the_one_its_parent_gives_it(own):
    gpus = devices.gpu_ids()[0] if own else devices.NO_GPU
    context = multiprocessing.get_context('spawn')
    queue = context.Queue()
    process = context.Process(target=_visible_gpus, args=(queue,))
    processes.start_process(process, gpus=gpus)
    try:
        assert queue.get(timeout=120) == (1 if own else 0)
    finally:
        process.join(timeout=60)
        processes.end_process(process)


def test_a_learner_sharing_its_gpu_cannot_take_more_than_its_limit():
    found = _python(
        'import json\n'
        'from common.system import devices\n'
        'devices.limit_gpu_memory(256)\n'
        'import tensorflow as tf\n'
        "small = tf.zeros((16, 1024, 1024)).device\n"  # 64 MB
        'try:\n'
        '    tf.zeros((128, 1024, 1024)).numpy()\n'  # 512 MB
        '    refused = False\n'
        'except tf.errors.ResourceExhaustedError:\n'
        '    refused = True\n'
        "print(json.dumps({'small': small, 'refused': refused}))",
        env={devices.VISIBLE_ENV: devices.gpu_ids()[0]})
    assert found == {'small': '/job:localhost/replica:0/task:0/device:GPU:0', 'refused': True}


A3C_CARTPOLE = [
    'AccelConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'",
    "AccelConfig.network = 'mlp'", 'AccelConfig.num_workers = 1',
    'AccelConfig.envs_per_worker = 2', 'AccelConfig.horizon = 8', 'AccelConfig.num_actor_learners = 2',
    'AccelConfig.checkpoint_every_steps = 1000000', 'AccelConfig.log_every_seconds = 0.5',
    'AccelConfig.total_steps = 600', 'AsyncLearnersConfig.shared_gpu_memory_mb = 1024']


def test_an_a3c_run_leaves_the_gpu_to_its_two_learners(tmp_path):
    """One GPU: both learners on it, 1024 MB each; the main process on the CPU."""
    gpus = {devices.VISIBLE_ENV: devices.gpu_ids()[0]}
    result = subprocess.run(
        [sys.executable, '-m', 'accel_tf.main', '--gin_file=gin/accel/a3c_pong.gin'] + [
            f'--gin_bindings={binding}' for binding in A3C_CARTPOLE] + [
            f'--run_dir={tmp_path / "run"}'], cwd=app.PROJECT_ROOT, capture_output=True,
        text=True, timeout=300, env=dict(ENV, **gpus))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith('compute: 2 learner processes sharing GPU:0'), result.stdout
    assert '1024 MB each' in result.stdout.splitlines()[0]
    rows = run_files.read_csv(tmp_path / 'run' / 'metrics.csv')
    assert int(rows[-1]['env_steps']) >= 600 and int(rows[-1]['updates']) > 0


def test_the_a3c_cpu_baseline_hides_every_gpu(tmp_path):
    bindings = ['GA3CConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'",
                "GA3CConfig.network = 'mlp'", 'GA3CConfig.num_agents = 2',
                'GA3CConfig.dynamic_settings = False', 'GA3CConfig.total_steps = 300',
                'GA3CConfig.log_every_seconds = 0.5', "GA3CConfig.algorithm = 'a3c_cpu'"]
    result = subprocess.run(
        [sys.executable, '-m', 'ga3c_tf.main'] + [f'--gin_bindings={binding}'
                                                  for binding in bindings] + [
            f'--run_dir={tmp_path / "run"}'], cwd=app.PROJECT_ROOT, capture_output=True,
        text=True, timeout=300, env=ENV)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines()[0].endswith('(GPUs hidden from every process of this run)')


def test_mirrored_replicas_compute_on_gpus_and_more_replicas_are_refused():
    count = _gpu_count()
    with pytest.raises(errors.ConfigError, match=f'num_replicas={count + 1} '):
        distribute.make_strategy('mirrored', count + 1)
    found = _python(
        'import json\n'
        'from common.scale import distribute\n'
        f"strategy = distribute.make_strategy('mirrored', {count})\n"
        "print(json.dumps(list(strategy.extended.worker_devices)))")
    assert found == [f'/job:localhost/replica:0/task:0/device:GPU:{index}'
                     for index in range(count)]


def test_two_gpu_replicas_update_as_one_device():
    if _gpu_count() < 2:
        pytest.skip('needs 2 GPUs')
    result = subprocess.run([sys.executable, os.path.join(SCALE_SCRIPTS, 'mirrored_updates.py')],
                            env=ENV, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    for algorithm in ('a2c', 'ppo', 'dqn', 'dqn_weighted', 'paac'):
        assert found[algorithm]['moved'] > 1e-4, algorithm
        assert found[algorithm]['difference'] < 1e-5, (algorithm, found[algorithm])
        assert found[algorithm]['replicas'] == 0.0, algorithm


def test_two_localhost_workers_on_a_gpu_each_update_as_one_process(tmp_path):
    if _gpu_count() < 2:
        pytest.skip('needs 2 GPUs')
    script = os.path.join(SCALE_SCRIPTS, 'multi_worker_updates.py')
    ports = ','.join(str(port) for port in cluster.free_ports(2))
    gpus = multi_worker.localhost_gpus(2)
    assert devices.NO_GPU not in gpus
    workers = [subprocess.Popen(
        [sys.executable, script, str(index), ports, str(tmp_path / f'worker{index}.npz')],
        env=dict(ENV, **{devices.VISIBLE_ENV: gpus[index]}), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True) for index in range(2)]
    single = subprocess.run([sys.executable, script, 'single', str(tmp_path / 'single.npz')],
                            env=dict(ENV, **{devices.VISIBLE_ENV: gpus[0]}),
                            capture_output=True, text=True, timeout=240)
    try:
        outputs = [worker.communicate(timeout=240) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    assert single.returncode == 0, single.stderr[-3000:]
    for worker, (_, stderr) in zip(workers, outputs):
        assert worker.returncode == 0, stderr[-3000:]
    def weights(path):
        with np.load(path) as saved:
            return [saved[f'arr_{index}'] for index in range(len(saved.files) - 1)]

    reference = weights(tmp_path / 'single.npz')
    for index in range(2):
        for got, want in zip(weights(tmp_path / f'worker{index}.npz'), reference):
            np.testing.assert_allclose(got, want, atol=1e-5)


def test_the_doctor_smoke_steps_run_on_the_gpu():
    result = subprocess.run([sys.executable, '-m', 'common.doctor'], cwd=app.PROJECT_ROOT,
                            capture_output=True, text=True, timeout=120, env=ENV)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    smoke = [line for line in result.stdout.splitlines() if ' ms per update on ' in line]
    assert len(smoke) == 2 and all(line.endswith('on GPU:0') for line in smoke), result.stdout
    assert '  ok: a GPU computes' in result.stdout.splitlines()
