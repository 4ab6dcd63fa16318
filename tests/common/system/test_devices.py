"""Which devices a run's processes compute on (common/system/devices.py), on this CPU machine with
TensorFlow's device functions faked where a GPU is needed: memory growth and the GPUs each kind
of child process starts with, the learners' GPUs, the compute line, the driver warning, the
refused mirrored config and the multi-worker collectives."""
import multiprocessing
import os
import types

import pytest
import tensorflow as tf

from common.launch import process_setup
from common.launch.config import DistributeConfig
from common.system import devices
from common.system import errors
from common.system import processes

H100 = 'NVIDIA H100 80GB HBM3'


class FakeGPUs:
    """count GPUs named H100 behind tf.config's device functions (the CPU stays real), with
    what set_visible_devices and set_logical_device_configuration were given."""

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
                            lambda device: {'device_name': H100, 'compute_capability': (9, 0)})
        monkeypatch.setattr(tf.config.experimental, 'get_memory_growth', lambda device: False)
        monkeypatch.setattr(tf.test, 'is_built_with_cuda', lambda: built_with_cuda)


@pytest.fixture
def gpu_environment(monkeypatch):
    """A process environment as a GPU machine's: GPUs not hidden, memory growth on."""
    monkeypatch.delenv(devices.VISIBLE_ENV, raising=False)
    monkeypatch.setenv(devices.GROWTH_ENV, 'true')
    return monkeypatch


def test_every_process_of_a_run_gets_memory_growth_unless_the_user_chose():
    environ = {}
    process_setup.configure(environ, argv=['main.py'])
    assert environ[devices.GROWTH_ENV] == 'true'
    environ = {devices.GROWTH_ENV: 'false'}
    process_setup.configure(environ, argv=['main.py'])
    assert environ[devices.GROWTH_ENV] == 'false'


def _report_environment(queue):
    queue.put({name: os.environ.get(name) for name in (
        devices.VISIBLE_ENV, devices.GROWTH_ENV, devices.CHILD_GPUS_ENV)})


@pytest.mark.slow
@pytest.mark.parametrize('gpus, seen', [(devices.NO_GPU, ''), ('1', '1'), (None, 'inherited')])
def test_a_spawned_child_sees_the_gpus_its_parent_gives_it(gpus, seen, monkeypatch):
    """The choice reaches that child alone, before anything it unpickles loads TensorFlow
    (child_setup), with memory growth inherited; the parent's environment is left as it was."""
    monkeypatch.setenv(devices.VISIBLE_ENV, 'inherited')
    monkeypatch.setenv(devices.GROWTH_ENV, 'true')
    context = multiprocessing.get_context('spawn')
    queue = context.Queue()
    process = context.Process(target=_report_environment, args=(queue,))
    processes.start_process(process, gpus=gpus)
    try:
        reported = queue.get(timeout=60)
    finally:
        process.join(timeout=30)
        processes.end_process(process)
    assert reported == {devices.VISIBLE_ENV: seen, devices.GROWTH_ENV: 'true',
                        devices.CHILD_GPUS_ENV: None}
    assert devices.CHILD_GPUS_ENV not in os.environ
    assert os.environ[devices.VISIBLE_ENV] == 'inherited'


def test_apply_child_gpus_makes_the_parents_choice_the_childs_visible_gpus():
    environ = {devices.CHILD_GPUS_ENV: '2', devices.VISIBLE_ENV: '0,1,2'}
    devices.apply_child_gpus(environ)
    assert environ == {devices.VISIBLE_ENV: '2'}
    environ = {devices.VISIBLE_ENV: '0'}
    devices.apply_child_gpus(environ)
    assert environ == {devices.VISIBLE_ENV: '0'}


def test_a_gpu_choice_that_is_not_a_string_is_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^gpus=1; allowed: None .*'0,1'$"):
        with devices.child_gpus(1):
            pass


def test_gpu_ids_follow_the_parents_cuda_visible_devices(monkeypatch, gpu_environment):
    FakeGPUs(monkeypatch, 2)
    assert devices.gpu_ids() == ['0', '1']
    monkeypatch.setenv(devices.VISIBLE_ENV, '3, 5')
    assert devices.gpu_ids() == ['3', '5']


def test_learners_get_a_gpu_each_or_share_them_with_bounded_memory():
    own = devices.learner_gpus(2, 4096, ids=['0', '1'])
    assert own == [devices.LearnerGPU('0', None), devices.LearnerGPU('1', None)]
    shared = devices.learner_gpus(3, 2048, ids=['4', '7'])
    assert shared == [devices.LearnerGPU('4', 2048), devices.LearnerGPU('7', None),
                      devices.LearnerGPU('4', 2048)]
    assert devices.learner_gpus(2, 2048, ids=[]) == [devices.LearnerGPU(None, None)] * 2


@pytest.mark.parametrize('gpu_count, expected', [
    (1, [('0', 4096), ('0', 4096)]),
    (2, [('0', None), ('1', None)]),
    (0, [(None, None), (None, None)])])
def test_learner_processes_start_each_learner_with_its_gpu(gpu_count, expected, monkeypatch,
                                                            gpu_environment):
    """A3C's and APPO's learner processes: the GPUs each is started with, and the memory
    limit it applies itself (its last argument) where learners share a GPU."""
    from common.units import async_learners  # pylint: disable=import-outside-toplevel
    FakeGPUs(monkeypatch, gpu_count)
    started = []
    monkeypatch.setattr(processes, 'start_process',
                        lambda process, gpus=None: started.append((gpus, process._args[-1])))
    learners = async_learners.LearnerProcesses(None, None, None, num_actor_learners=2, seed=0)
    learners.close()
    assert started == expected


def test_a_learner_sharing_its_gpu_bounds_its_memory_with_a_logical_device(monkeypatch):
    fake = FakeGPUs(monkeypatch, 2)
    devices.limit_gpu_memory(None)
    assert fake.logical == {}
    devices.limit_gpu_memory(2048)
    assert {gpu.name: [config.memory_limit for config in configs]
            for gpu, configs in fake.logical.items()} == {
        '/physical_device:GPU:0': [2048], '/physical_device:GPU:1': [2048]}


def test_a3c_cpu_agents_start_without_gpus(monkeypatch):
    from common.envs import gym as gym_envs  # pylint: disable=import-outside-toplevel
    from ga3c_tf import a3c_cpu  # pylint: disable=import-outside-toplevel
    from ga3c_tf import config as config_lib  # pylint: disable=import-outside-toplevel
    from ga3c_tf import learner as learner_lib  # pylint: disable=import-outside-toplevel
    config = config_lib.GA3CConfig(env_config=gym_envs.GymConfig('CartPole-v1'),
                                    network='mlp', num_agents=1, dynamic_settings=False)
    config.validate()
    started = []
    monkeypatch.setattr(processes, 'start_process',
                        lambda process, gpus=None: started.append(gpus))
    with a3c_cpu.A3CServer(config, learner_lib.build_learner(config)) as server:
        server.add_agent()
    assert started == [devices.NO_GPU]


@pytest.mark.parametrize('row, gpus', [('env/process', devices.NO_GPU),
                                       ('replay/prioritized_512', devices.NO_GPU),
                                       ('paac', None)])
def test_bench_rows_that_only_step_simulators_start_without_gpus(row, gpus, monkeypatch):
    from common import bench  # pylint: disable=import-outside-toplevel

    class Started(Exception):
        pass

    def start(process, gpus=None):
        raise Started(gpus)

    monkeypatch.setattr(processes, 'start_process', start)
    with pytest.raises(Started) as started:
        bench.measure_row(row, {})
    assert started.value.args == (gpus,)


def test_localhost_workers_get_a_gpu_each_or_none():
    from common.scale import multi_worker  # pylint: disable=import-outside-toplevel
    assert multi_worker.localhost_gpus(2, ids=['0', '1', '2']) == ['0', '1']
    assert multi_worker.localhost_gpus(2, ids=['0']) == [devices.NO_GPU, devices.NO_GPU]
    assert multi_worker.localhost_gpus(2, ids=[]) == [devices.NO_GPU, devices.NO_GPU]


def test_the_compute_line_names_a_gpu_and_its_memory_setting(monkeypatch, gpu_environment):
    fake = FakeGPUs(monkeypatch, 1)
    assert devices.compute_line() == f'compute: GPU:0 {H100}, memory growth'
    fake.logical[fake.gpus[0]] = [tf.config.LogicalDeviceConfiguration(memory_limit=512)]
    assert devices.compute_line() == f'compute: GPU:0 {H100}, memory limit 512 MB, memory growth'
    monkeypatch.setenv(devices.GROWTH_ENV, 'false')
    del fake.logical[fake.gpus[0]]
    assert devices.compute_line() == (f'compute: GPU:0 {H100}, no memory growth (its free '
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


def test_the_compute_line_of_learner_processes(monkeypatch, gpu_environment):
    fake = FakeGPUs(monkeypatch, 1)
    shared = devices.compute_line(devices.Placement(learners=2, shared_gpu_memory_mb=2048))
    assert shared == (f'compute: 2 learner processes sharing GPU:0 {H100}, 2048 MB each, '
                      'memory growth; the main process on the CPU')
    fake.gpus.append(tf.config.PhysicalDevice('/physical_device:GPU:1', 'GPU'))
    own = devices.compute_line(devices.Placement(learners=2))
    assert own == (f'compute: 2 learner processes, one GPU each (GPU:0 {H100} + GPU:1 {H100}), '
                   'memory growth; the main process on the CPU')


def test_a_run_hides_the_gpus_from_a_main_process_that_does_not_compute(monkeypatch,
                                                                         gpu_environment):
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0, 1}, raising=False)
    fake = FakeGPUs(monkeypatch, 1)
    lines = []
    devices.start_run(devices.Placement(), log=lines.append)
    assert fake.hidden_calls == [] and lines == [f'compute: GPU:0 {H100}, memory growth']
    lines.clear()
    devices.start_run(devices.Placement(learners=2), log=lines.append)
    assert fake.hidden_calls == [([], 'GPU')]
    assert lines[0].startswith('compute: 2 learner processes sharing GPU:0')
    lines.clear()
    devices.start_run(devices.Placement(cpu_only=True), log=lines.append)
    assert lines == ['compute: CPU, 2 cores (GPUs hidden from every process of this run)']


def test_hiding_the_gpus_too_late_is_a_one_line_warning(monkeypatch):
    FakeGPUs(monkeypatch, 1)

    def too_late(devices_, device_type=None):
        raise RuntimeError('Visible devices cannot be modified after being initialized')

    monkeypatch.setattr(tf.config, 'set_visible_devices', too_late)
    warning = devices.hide_gpus_here()
    assert warning.startswith('warning: this process had already made its GPU devices')
    assert '\n' not in warning


@pytest.fixture
def driver(fake_driver):
    """An NVIDIA driver on this machine (its /proc file faked), nvidia-smi not on PATH."""
    return fake_driver('NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15\n')


def test_a_driver_without_a_gpu_in_tensorflow_warns_naming_the_gpu_install(
        driver, monkeypatch, gpu_environment):
    FakeGPUs(monkeypatch, 0)
    warning = devices.driver_warning()
    assert warning == (f'warning: an NVIDIA driver is installed ({driver}) but TensorFlow finds '
                       'no GPU (its CUDA libraries are missing, or need a newer driver), so this '
                       "computes on the CPU; pip install -e '.[gpu]' installs TensorFlow with "
                       'its CUDA libraries (python -m common.doctor says more)')
    FakeGPUs(monkeypatch, 0, built_with_cuda=False)
    assert 'but this TensorFlow is built without CUDA, so' in devices.driver_warning()
    lines = []
    devices.start_run(log=lines.append)
    assert lines[1] == devices.driver_warning()


def test_no_driver_warning_with_a_gpu_without_a_driver_or_with_gpus_hidden(
        driver, monkeypatch, gpu_environment, tmp_path):
    FakeGPUs(monkeypatch, 1)
    assert devices.driver_warning() is None
    FakeGPUs(monkeypatch, 0)
    monkeypatch.setenv(devices.VISIBLE_ENV, '')
    assert devices.driver_warning() is None
    monkeypatch.delenv(devices.VISIBLE_ENV)
    monkeypatch.setattr(devices, 'DRIVER_FILE', str(tmp_path / 'absent'))
    assert devices.driver_warning() is None


def test_mirrored_with_more_replicas_than_gpus_is_refused_in_one_line(monkeypatch,
                                                                      gpu_environment):
    from common.scale import distribute  # pylint: disable=import-outside-toplevel
    fake = FakeGPUs(monkeypatch, 1)
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


def test_multi_worker_collectives_use_nccl_only_on_whole_gpus(monkeypatch):
    from common.scale import distribute  # pylint: disable=import-outside-toplevel
    implementation = tf.distribute.experimental.CommunicationImplementation
    fake = FakeGPUs(monkeypatch, 1)
    assert distribute.collective_implementation() == implementation.NCCL
    fake.logical[fake.gpus[0]] = [tf.config.LogicalDeviceConfiguration(memory_limit=512)] * 2
    assert distribute.collective_implementation() == implementation.RING
    fake.logical.clear()
    fake.visible = []  # physical, but hidden from this process
    assert distribute.collective_implementation() == implementation.RING


def test_the_entry_point_sets_the_devices_up_before_the_run_directory(monkeypatch, capsys,
                                                                      gpu_environment,
                                                                      tmp_path):
    """Once per run, before the run directory: the paper's placement applied and named, and a
    mirrored config that does not fit the GPUs refused before anything is written."""
    from common.launch import entry  # pylint: disable=import-outside-toplevel
    fake = FakeGPUs(monkeypatch, 1)
    monkeypatch.setattr(entry, 'FLAGS', types.SimpleNamespace(
        gin_file=[], gin_bindings=[], cluster=None, task_index=None))
    started, trained = [], []

    def start_run_dir(*args, **kwargs):
        started.append(args)
        return str(tmp_path)

    monkeypatch.setattr(entry.app, 'start_run_dir', start_run_dir)
    config = types.SimpleNamespace(env_config=None, distribute=DistributeConfig())
    paper = entry.Paper('probe', lambda files, bindings: config,
                        lambda config_, run_dir: trained.append(run_dir), lambda config_: {},
                        compute=lambda config_: devices.Placement(learners=2))
    entry.launch(paper)
    assert fake.hidden_calls == [([], 'GPU')] and trained == [str(tmp_path)]
    assert capsys.readouterr().out.startswith('compute: 2 learner processes sharing GPU:0')
    config.distribute = DistributeConfig('mirrored', 2)
    fake.visible = list(fake.gpus)  # a main process that computes sees its GPU
    with pytest.raises(errors.ConfigError, match='num_replicas=2'):
        entry.launch(entry.Paper('probe', lambda files, bindings: config, trained.append,
                              lambda config_: {}))
    assert len(started) == 1 and len(trained) == 1


def test_the_papers_say_which_processes_compute():
    from accel_tf import main as accel_main  # pylint: disable=import-outside-toplevel
    from ga3c_tf import main as ga3c_main  # pylint: disable=import-outside-toplevel
    a3c = accel_main.configure(['gin/accel/a3c_pong.gin'],
                               ['AsyncLearnersConfig.shared_gpu_memory_mb = 1000'])
    assert accel_main.PAPER.compute(a3c) == devices.Placement(
        learners=a3c.num_actor_learners, shared_gpu_memory_mb=1000)
    a2c = accel_main.configure(['gin/accel/a2c_pong.gin'], [])
    assert accel_main.PAPER.compute(a2c) == devices.Placement()
    with pytest.raises(errors.ConfigError,
                       match=r'^AsyncLearnersConfig.shared_gpu_memory_mb must be a positive '
                             r'integer, got 0$'):
        accel_main.configure(['gin/accel/a3c_pong.gin'],
                             ['AsyncLearnersConfig.shared_gpu_memory_mb = 0'])
    assert ga3c_main.PAPER.compute(types.SimpleNamespace(algorithm='a3c_cpu')).cpu_only
    assert not ga3c_main.PAPER.compute(types.SimpleNamespace(algorithm='ga3c')).cpu_only


@pytest.mark.parametrize('row', ['accel/a3c', 'accel/appo', 'a3c_cpu'])
def test_bench_rows_whose_process_does_not_compute_hide_its_gpus_before_building(row,
                                                                                 monkeypatch):
    """As their runs' main processes: the asynchronous rows' learners compute, the A3C-CPU
    baseline's agents on the CPU."""
    from common.launch import registry  # pylint: disable=import-outside-toplevel

    class Hidden(Exception):
        pass

    def hide():
        raise Hidden()

    monkeypatch.setattr(devices, 'hide_gpus_here', hide)
    rows = registry.bench_rows()
    with pytest.raises(Hidden):
        rows[row]({'seconds': 0.1, 'warmup_seconds': 0.1, 'num_envs': 4, 'num_workers': 2,
                   'game': 'pong'})


def test_the_native_dtype_is_bfloat16_only_where_the_device_runs_it():
    assert devices.native_dtype_for(['avx2', 'avx512f']) == (
        'float32', 'no avx512_bf16 or amx_bf16 on this CPU')
    assert devices.native_dtype_for(['avx2', 'avx512f', 'avx512_bf16']) == (
        'bfloat16', 'avx512_bf16 on this CPU')
    assert devices.native_dtype_for(['avx512_bf16', 'amx_bf16', 'amx_tile'])[1] == (
        'avx512_bf16/amx_bf16 on this CPU')
    # A GPU decides, whatever the CPU: every one must be 8.0 or later.
    assert devices.native_dtype_for(['avx512_bf16'], [(7, 5)]) == (
        'float32', 'GPU compute capability 7.5, under 8.0')
    assert devices.native_dtype_for([], [(9, 0), (8, 0)]) == (
        'bfloat16', 'GPU compute capability 8.0')
    assert devices.native_dtype_for([], [(9, 0), (7, 0)])[0] == 'float32'


def test_auto_reads_the_gpus_tensorflow_sees_and_else_the_cpu(monkeypatch, gpu_environment):
    monkeypatch.setattr(devices.machine_load, 'machine_record',
                        lambda: {'cpu_flags': ['avx2', 'avx512f']})
    monkeypatch.setattr(devices, 'nvidia_driver', lambda: None)
    assert devices.native_dtype() == ('float32', 'no avx512_bf16 or amx_bf16 on this CPU')
    FakeGPUs(monkeypatch, 2)  # H100s, compute capability 9.0
    assert devices.native_dtype()[0] == 'float32'  # no driver: TensorFlow is not asked
    monkeypatch.setattr(devices, 'nvidia_driver', lambda: devices.DRIVER_FILE)
    assert devices.native_dtype() == ('bfloat16', 'GPU compute capability 9.0')
    monkeypatch.setenv(devices.VISIBLE_ENV, '')  # the user hid the GPUs: the CPU computes
    assert devices.native_dtype()[0] == 'float32'


def test_the_compute_line_says_what_auto_chose_and_warns_of_emulated_bfloat16(
        monkeypatch, gpu_environment):
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(devices, 'native_dtype',
                        lambda: ('float32', 'no avx512_bf16 or amx_bf16 on this CPU'))
    monkeypatch.setattr(devices, 'driver_warning', lambda: None)
    monkeypatch.setattr(tf.config, 'list_physical_devices',
                        lambda device_type=None: [] if device_type == 'GPU' else ['cpu'])
    lines = []
    devices.start_run(devices.Placement(cpu_only=True), log=lines.append,
                      note=devices.dtype_note('float32', 'auto'))
    assert lines == ["compute: CPU, 2 cores; torsos in float32 (compute_dtype 'auto': no "
                     "avx512_bf16 or amx_bf16 on this CPU)"]
    assert devices.dtype_note('bfloat16', None) == (
        "; torsos in bfloat16, emulated here (no avx512_bf16 or amx_bf16 on this CPU): "
        "compute_dtype 'auto' or 'float32' may be faster")
    assert devices.dtype_note('float32', None) == ''
    monkeypatch.setattr(devices, 'native_dtype', lambda: ('bfloat16', 'avx512_bf16 on this CPU'))
    assert devices.dtype_note('bfloat16', 'auto') == (
        "; torsos in bfloat16 (compute_dtype 'auto': avx512_bf16 on this CPU)")
    assert devices.dtype_note('bfloat16', None) == '; torsos in bfloat16'
