"""Fixtures shared across the test packages."""
import os
import re

# GPUs are hidden from the suite (and the processes its tests start, which inherit this) before
# TensorFlow loads, so it runs on a GPU machine as on a CPU one: no test process reserves a GPU
# or computes there, and the numbers compared are the CPU's. FAST_RL_TEST_GPU=1 runs the gpu
# tests alone, with the GPUs visible: `FAST_RL_TEST_GPU=1 python -m pytest -m gpu tests`.
GPU_MODE = os.environ.get('FAST_RL_TEST_GPU') == '1'
if GPU_MODE:
    # Numbers compared across devices: float32 matmuls and convolutions in float32 (not TF32,
    # Ampere's and Hopper's default) and deterministic kernels, in the processes tests start too.
    os.environ['NVIDIA_TF32_OVERRIDE'] = '0'
    os.environ['TF_DETERMINISTIC_OPS'] = '1'
else:
    os.environ['CUDA_VISIBLE_DEVICES'] = ''

# The test process is set up as an entry point's is (tf.keras = tf-keras for the tests' Keras
# and tf-agents, TensorFlow imported quietly), before any test module loads TensorFlow.
from common.launch import process_setup  # pylint: disable=wrong-import-position

process_setup.configure()

# pylint: disable=wrong-import-position
import gin  # noqa: E402
import pytest  # noqa: E402


def pytest_configure(config):
    """In GPU mode, TF32 off and op determinism on in this process (before any test runs)."""
    del config
    if GPU_MODE:
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        tf.config.experimental.enable_tensor_float_32_execution(False)
        tf.config.experimental.enable_op_determinism()


def gpu_visible():
    """Whether TensorFlow sees a GPU here (only ever in GPU mode)."""
    if not GPU_MODE:
        return False
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    return bool(tf.config.list_physical_devices('GPU'))


def pytest_runtest_setup(item):
    """gpu tests run only in GPU mode where a GPU is visible; in GPU mode, only they run."""
    is_gpu_test = item.get_closest_marker('gpu') is not None
    if is_gpu_test and not GPU_MODE:
        pytest.skip('GPUs are hidden from the suite; FAST_RL_TEST_GPU=1 python -m pytest -m gpu '
                    'tests runs this on a GPU machine')
    if is_gpu_test and not gpu_visible():
        pytest.skip('no GPU visible to TensorFlow here')
    if GPU_MODE and not is_gpu_test:
        pytest.skip('FAST_RL_TEST_GPU=1 runs only the gpu tests; the others run with the GPUs '
                    'hidden')


@pytest.fixture(autouse=True)
def _clean_gin():
    """Every test starts from an empty gin config, whatever the one before it parsed."""
    yield
    gin.clear_config()


@pytest.fixture
def tf_agents_transitions():
    """build(observations, actions, rewards, next_observations, terminals): the batch of
    transitions as tf-agents' two-step Trajectory, what its DQN agents' _loss takes (a terminal
    transition's next step is LAST with discount 0)."""
    def build(observations, actions, rewards, next_observations, terminals):
        # Imported here: only the tests that use it load tf-agents.
        import numpy as np  # pylint: disable=import-outside-toplevel
        import tensorflow as tf  # pylint: disable=import-outside-toplevel
        from tf_agents.trajectories import time_step as ts  # pylint: disable=import-outside-toplevel
        from tf_agents.trajectories import trajectory  # pylint: disable=import-outside-toplevel
        batch = len(actions)
        mid = np.full((batch, 1), ts.StepType.MID, np.int32)
        next_type = np.where(terminals[:, None] > 0, ts.StepType.LAST,
                             ts.StepType.MID).astype(np.int32)
        experience = trajectory.Trajectory(
            step_type=np.concatenate([mid, next_type], axis=1),
            observation=np.stack([observations, next_observations], axis=1),
            action=np.stack([actions, actions], axis=1), policy_info=(),
            next_step_type=np.concatenate([next_type, mid], axis=1),
            reward=np.stack([rewards, rewards], axis=1),
            discount=np.stack([1.0 - terminals, np.ones(batch, np.float32)], axis=1))
        return tf.nest.map_structure(tf.convert_to_tensor, experience)
    return build


class ProcessTree:
    """What a test of a run's ending needs to see: its processes (from /proc), the shared-memory
    segments it left, and a bounded wait."""

    @staticmethod
    def children(pid):
        """Direct child pids of pid."""
        import os  # pylint: disable=import-outside-toplevel
        found = []
        for name in os.listdir('/proc'):
            if name.isdigit():
                try:
                    with open(f'/proc/{name}/stat') as f:
                        if int(f.read().rsplit(')', 1)[1].split()[1]) == pid:
                            found.append(int(name))
                except (OSError, IndexError):
                    pass
        return found

    @classmethod
    def descendants(cls, pid):
        pending, found = [pid], []
        while pending:
            children = cls.children(pending.pop())
            found += children
            pending += children
        return found

    @classmethod
    def spawned_children(cls, pid):
        """The direct children of pid that multiprocessing spawned as workers (its resource
        tracker left out): a run's own workers, whatever other tests run beside it."""
        workers = []
        for child in cls.children(pid):
            try:
                with open(f'/proc/{child}/cmdline') as f:
                    command = f.read()
            except OSError:
                continue
            if 'spawn_main' in command and 'resource_tracker' not in command:
                workers.append(child)
        return workers

    @staticmethod
    def alive(pids):
        import os  # pylint: disable=import-outside-toplevel
        return [pid for pid in pids if os.path.exists(f'/proc/{pid}')]

    @staticmethod
    def wait_for(predicate, seconds=120.0):
        """True once predicate() is, False if it is not within seconds."""
        import time  # pylint: disable=import-outside-toplevel
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.2)
        return False

    @staticmethod
    def shm_entries():
        import os  # pylint: disable=import-outside-toplevel
        return {name for name in os.listdir('/dev/shm') if not name.startswith('sem.')}

    @staticmethod
    def mapped_shm():
        """The shared-memory segments some live process maps."""
        import os  # pylint: disable=import-outside-toplevel
        mapped = set()
        for name in os.listdir('/proc'):
            if name.isdigit():
                try:
                    with open(f'/proc/{name}/maps') as f:
                        mapped.update(line.split('/dev/shm/', 1)[1].split()[0]
                                      for line in f if '/dev/shm/' in line)
                except OSError:
                    pass
        return mapped

    @classmethod
    def leaked_shm(cls, before, seconds=15.0):
        """The segments that appeared since before (a shm_entries() set) and that no live process
        maps, still so after a bounded wait: what a run left behind. A segment that another
        test's live processes hold is theirs, so the tests can run in parallel (pytest -n)."""
        import time  # pylint: disable=import-outside-toplevel

        def unmapped():
            return (cls.shm_entries() - before) - cls.mapped_shm()

        deadline = time.monotonic() + seconds
        leaked = unmapped()
        while leaked and time.monotonic() < deadline:
            time.sleep(0.2)
            # Still there and still unmapped: one being made or removed this instant is not.
            leaked &= unmapped()
        return leaked


class EntryPoint:
    """`python -m module` as a user runs it: in a working directory of the test's, the project
    importable. gin_file (a path from the project root) is the preset flags() names unless
    told another."""

    def __init__(self, module, gin_file=None):
        self.module, self.gin_file = module, gin_file

    def flags(self, bindings=(), gin_file=None):
        """--gin_file= the preset (or gin_file) and a --gin_bindings= for each binding."""
        from common.launch import app  # pylint: disable=import-outside-toplevel
        return [f'--gin_file={os.path.join(app.PROJECT_ROOT, gin_file or self.gin_file)}'] + [
            f'--gin_bindings={binding}' for binding in bindings]

    def command(self, args):
        import sys  # pylint: disable=import-outside-toplevel
        return [sys.executable, '-m', self.module] + list(args)

    @staticmethod
    def env():
        from common.launch import app  # pylint: disable=import-outside-toplevel
        return dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)

    def run(self, args, cwd, timeout=240):
        """The finished command: its CompletedProcess, stdout and stderr as text."""
        import subprocess  # pylint: disable=import-outside-toplevel
        return subprocess.run(self.command(args), cwd=cwd, env=self.env(), capture_output=True,
                              text=True, timeout=timeout)

    def start(self, args, cwd, **popen):
        """The started command: its Popen, stdout and stderr piped as text unless popen says."""
        import subprocess  # pylint: disable=import-outside-toplevel
        popen = dict({'stdout': subprocess.PIPE, 'stderr': subprocess.PIPE, 'text': True},
                     **popen)
        return subprocess.Popen(self.command(args), cwd=cwd, env=self.env(), **popen)


@pytest.fixture
def entry_point():
    """entry_point(module, gin_file=None): an EntryPoint, to run or start `python -m module`."""
    return EntryPoint


# Each paper's entry point on CartPole with the 'mlp' network and a few simulators: a run of a
# few hundred steps in seconds (tests/test_killed_sessions.py, tests/test_carry.py).
TINY_CARTPOLE = {
    'paac': ['PAACConfig.env_config = @GymConfig()', "PAACConfig.network = 'mlp'",
             'PAACConfig.num_envs = 4', 'PAACConfig.num_workers = 2'],
    'ga3c': ['GA3CConfig.env_config = @GymConfig()', "GA3CConfig.network = 'mlp'",
             'GA3CConfig.num_agents = 2', 'GA3CConfig.dynamic_settings = False'],
    'dqn': ['DQNConfig.env_config = @GymConfig()', "DQNConfig.network = 'mlp'",
            'DQNConfig.num_actors = 2', 'DQNConfig.target_period = 100',
            'DQNConfig.replay_capacity = 1000', 'DQNConfig.prepopulate_steps = 100',
            'DQNConfig.eval_every_steps = 100000000'],
    'accel': ['AccelConfig.env_config = @GymConfig()', "AccelConfig.network = 'mlp'",
              'AccelConfig.envs_per_worker = 2', 'AccelConfig.horizon = 8'],
}
CONFIG_CLASS = {'paac': 'PAACConfig', 'ga3c': 'GA3CConfig', 'dqn': 'DQNConfig',
                'accel': 'AccelConfig'}


@pytest.fixture
def cartpole_command():
    """command(paper, bindings=(), flags=()): the argv of paper's entry point on its Pong preset
    bound to TINY_CARTPOLE, no periodic checkpoint, a row every 0.05 s; bindings may name the
    config class as {config}."""
    def command(paper, bindings=(), flags=()):
        owner = CONFIG_CLASS[paper]
        every = TINY_CARTPOLE[paper] + [
            "GymConfig.env_id = 'CartPole-v1'", f'{owner}.checkpoint_every_steps = 100000000',
            f'{owner}.log_every_seconds = 0.05'] + [
                binding.format(config=owner) for binding in bindings]
        paper_main = EntryPoint(f'{paper}_tf.main', os.path.join('gin', paper, 'pong.gin'))
        return paper_main.command(paper_main.flags(every) + list(flags))
    return command


@pytest.fixture
def fail_cell(monkeypatch):
    """fail_cell(module, name, key, error): module.name, a reproduction's measure of one cell,
    raises error where its first arguments are key, and measures as before elsewhere: a failed
    cell is reported and the others are measured."""
    def fail(module, name, key, error):
        real_cell = getattr(module, name)

        def cell(*args):
            if args[:len(key)] == key:
                raise error
            return real_cell(*args)

        monkeypatch.setattr(module, name, cell)
    return fail


@pytest.fixture
def process_tree():
    return ProcessTree


def _xla_compiled_calls(concrete_function):
    """The function calls of a traced tf.function marked for XLA compilation, those of its
    nested functions included."""
    graph_def = concrete_function.graph.as_graph_def()
    nodes = list(graph_def.node) + [node for function in graph_def.library.function
                                    for node in function.node_def]
    return [node for node in nodes if node.op in ('PartitionedCall', 'StatefulPartitionedCall')
            and node.attr['_XlaMustCompile'].b]


@pytest.fixture
def xla_compiled_calls():
    return _xla_compiled_calls


# The tests that take longest (about 35 s to 190 s each on two xdist workers of a 2-core Zen 1,
# the whole suite's `--durations` on the otherwise idle machine, 2026-12-03), started first,
# longest first: the queue is handed to the workers in collection order, and one of them left
# alone on a long test at the end of the suite would idle the other core.
LONGEST_FIRST = (
    'tests/ga3c_tf/test_learning.py::test_ga3c_learns_cartpole',
    'tests/accel_tf/test_learning.py::test_learns_cartpole[appo]',
    'tests/accel_tf/test_q_family.py::test_categorical_q_learning_learns_cartpole[rainbow',
    'tests/dqn_tf/test_dqn.py::test_dqn_learns_cartpole',
    'tests/dqn_tf/test_reproduce.py::test_tiny_reproduction',
    'tests/accel_tf/test_async.py::test_run_logs_policy_lag_resumes_and_evaluates[appo]',
    'tests/accel_tf/test_learning.py::test_learns_cartpole[a3c]',
    'tests/common/test_suite.py::test_three_games',
    'tests/dqn_tf/test_main.py::test_speedtest_writes_the_ratio_table',
    'tests/accel_tf/test_multi_worker_main.py::test_rainbow_on_two_workers',
    'tests/accel_tf/test_async.py::test_run_logs_policy_lag_resumes_and_evaluates[a3c]',
    'tests/common/test_sweep.py::test_two_points',
    'tests/paac_tf/test_reproduce.py::test_tiny_figure_2',
    'tests/accel_tf/test_q_family.py::test_rainbow_runs_resumes_and_evaluates',
    'tests/examples/test_examples.py::test_each_example_learns_what_its_docstring_claims',
    'tests/accel_tf/test_multi_worker_main.py::test_two_workers_write_one_run_directory',
    'tests/test_killed_sessions.py::test_sessions_killed_before_their_first_checkpoint',
    'tests/test_carry.py::test_a_carried_run_goes_on_as_a_resume_in_place',
    'tests/test_seed_exact.py::test_twenty_thousand_pong_steps_of_paac_are_the_same_twice',
    'tests/test_seed_exact.py::test_two_runs_of_a_seed_write_the_same_steps_episodes_scores',
    'tests/common/scale/test_distribute.py::test_two_replicas_on_half_batches',
    'tests/dqn_tf/test_main.py::test_bench_rows_measure_whole_periods',
    'tests/paac_tf/test_main.py::test_a_run_its_ctrl_c_and_its_resume_print_no_warning',
    'tests/common/units/test_async_learners.py::test_a_dead_learner_stops_the_run',
    'tests/accel_tf/test_main.py::test_async_bench_rows_count_both_learners_steps',
    'tests/ga3c_tf/test_main.py::test_run_writes_the_run_format_resumes_and_plays',
    'tests/paac_tf/test_main.py::test_a_preset_changed_under_a_run_does_not_change_its_env',
    'tests/accel_tf/test_reproduce.py::test_tiny_figure_1b',
    'tests/paac_tf/test_main.py::test_a_full_or_read_only_disk_ends_the_run',
    'tests/ga3c_tf/test_main.py::test_a3c_cpu_resumes_with_its_schedule',
    'tests/dqn_tf/test_main.py::test_run_writes_the_run_directory',
)


def pytest_collection_modifyitems(items):
    """Moves the LONGEST_FIRST tests to the front, in that order; the rest keep theirs."""
    def rank(item):
        for index, prefix in enumerate(LONGEST_FIRST):
            if item.nodeid.startswith(prefix):
                return index
        return len(LONGEST_FIRST)

    items.sort(key=rank)


def _kept_checkpoint_scores(learner, env_config, run_dir, num_episodes=20):
    """Mean return over num_episodes sampled-policy episodes of each checkpoint kept under
    run_dir/checkpoints, restored into learner.model, by checkpoint step (oldest first)."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from common import evaluate  # pylint: disable=import-outside-toplevel
    checkpoint = tf.train.Checkpoint(model=learner.model)
    state = tf.train.get_checkpoint_state(str(run_dir / 'checkpoints'))
    scores = {}
    for path in state.all_model_checkpoint_paths:
        checkpoint.restore(path).expect_partial()
        scores[path.rsplit('-', 1)[-1]] = float(np.mean(evaluate.run_episodes(
            env_config, lambda obs: learner.act(obs).numpy(), num_episodes=num_episodes,
            seed=99)))
    return scores


@pytest.fixture
def kept_checkpoint_scores():
    """Asynchronous runs are judged on their kept checkpoints: one late collapse is no failure."""
    return _kept_checkpoint_scores


@pytest.fixture
def small_disk(tmp_path):
    """make(size) mounts a tmpfs of that size ('256k', '8m') at a temporary directory and
    returns its path: a disk that fills up for real. Needs mount rights (root, as on the
    project's machines); skipped where there are none. Unmounted at the end."""
    import subprocess  # pylint: disable=import-outside-toplevel
    mounted = []

    def make(size):
        mount_point = tmp_path / f'disk{len(mounted)}'
        mount_point.mkdir()
        result = subprocess.run(['mount', '-t', 'tmpfs', '-o', f'size={size}', 'tmpfs',
                                 str(mount_point)], capture_output=True, check=False)
        if result.returncode != 0:
            pytest.skip(f'cannot mount a tmpfs here: {result.stderr.decode().strip()}')
        mounted.append(str(mount_point))
        return str(mount_point)

    yield make
    for mount_point in mounted:
        subprocess.run(['umount', '-l', mount_point], check=False)


def _finite_checkpoints(run_dir):
    """{env steps: whether every floating-point tensor in it is finite} of the checkpoints kept
    under run_dir/checkpoints."""
    import numpy as np  # pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    found = {}
    for index in (run_dir / 'checkpoints').glob('ckpt-*.index'):
        reader = tf.train.load_checkpoint(str(index.with_suffix('')))
        found[int(index.stem.split('-')[1])] = all(
            np.isfinite(reader.get_tensor(key)).all()
            for key, dtype in reader.get_variable_to_dtype_map().items() if dtype.is_floating)
    return found


@pytest.fixture
def finite_checkpoints():
    """A diverging run must keep only checkpoints from before it diverged."""
    return _finite_checkpoints


def _error_lines(stderr):
    """The lines of a run's stderr that begin 'error:' (the one-line errors of common.launch)."""
    return [line for line in stderr.splitlines() if line.startswith('error:')]


@pytest.fixture
def errors_in():
    """Bad input and failed runs end with exactly one 'error:' line naming what went wrong."""
    return _error_lines


def _diverged_run(result, run_dir):
    """Checks a run that stopped on non-finite weights: exit 1, one 'error:' line naming the
    update and the step, no traceback, and a last metrics row at that update and step that
    shows nan; returns (the error line, that step)."""
    from common.tools import run_files  # pylint: disable=import-outside-toplevel
    assert result.returncode == 1, result.stderr[-3000:]
    (error,) = _error_lines(result.stderr)
    found = re.match(r'error: non-finite (loss|grad_norm) \((nan|inf)\) at update (\d+), '
                     r'step ([\d,]+): the run diverged', error)
    assert found and 'Traceback' not in result.stderr, result.stderr[-3000:]
    updates, steps = int(found.group(3)), int(found.group(4).replace(',', ''))
    last = run_files.read_csv(run_dir / 'metrics.csv')[-1]
    assert (int(last['updates']), int(last['env_steps'])) == (updates, steps)
    assert 'nan' in (last['loss'], last['grad_norm'])
    return error, steps


@pytest.fixture
def diverged_run():
    """A diverged run stops at once with one line and keeps what it wrote before."""
    return _diverged_run
