"""Which devices a run's processes compute on (common/system/devices.py), on this CPU machine with
TensorFlow's device functions faked where a GPU is needed (conftest.py): memory growth and the
GPUs each kind of child process starts with, the learners' GPUs, and which processes of each
paper and bench row compute."""
import multiprocessing
import os
import types

import pytest

from common.launch import process_setup
from common.launch.config import DistributeConfig
from common.system import devices
from common.system import errors
from common.system import processes


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


def test_gpu_ids_follow_the_parents_cuda_visible_devices(fake_gpus, monkeypatch, gpu_environment):
    fake_gpus(2)
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
def test_learner_processes_start_each_learner_with_its_gpu(gpu_count, expected, fake_gpus,
                                                            monkeypatch, gpu_environment):
    """A3C's and APPO's learner processes: the GPUs each is started with, and the memory
    limit it applies itself (its last argument) where learners share a GPU."""
    from common.units import async_learners  # pylint: disable=import-outside-toplevel
    fake_gpus(gpu_count)
    started = []
    monkeypatch.setattr(processes, 'start_process',
                        lambda process, gpus=None: started.append((gpus, process._args[-1])))
    learners = async_learners.LearnerProcesses(None, None, None, num_actor_learners=2, seed=0)
    learners.close()
    assert started == expected


def test_a_learner_sharing_its_gpu_bounds_its_memory_with_a_logical_device(fake_gpus, monkeypatch):
    fake = fake_gpus(2)
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



def test_the_entry_point_sets_the_devices_up_before_the_run_directory(fake_gpus, monkeypatch,
                                                                      capsys, gpu_environment,
                                                                      tmp_path):
    """Once per run, before the run directory: the paper's placement applied and named, and a
    mirrored config that does not fit the GPUs refused before anything is written."""
    from common.launch import entry  # pylint: disable=import-outside-toplevel
    fake = fake_gpus(1)
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
