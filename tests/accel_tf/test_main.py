"""`python -m accel_tf.main` end to end: presets, config errors (the command's one-line stop:
tests/test_entry_points.py), run directory, resume, evaluation, and Pong through both samplers'
worker processes."""
import json
import os

import gin
import pytest

from accel_tf import kinds
from accel_tf import main as accel_main
from common.launch import app
from common.learners import optim
from common.system import errors
from common.tools import run_files

CARTPOLE_BINDINGS = [
    'AccelConfig.env_config = @GymConfig()',
    "GymConfig.env_id = 'CartPole-v1'",
    "AccelConfig.network = 'mlp'",
    'AccelConfig.envs_per_worker = 2',
    'AccelConfig.horizon = 8',
    'AccelConfig.total_steps = 320',
    'AccelConfig.checkpoint_every_steps = 160',
    'AccelConfig.log_every_seconds = 0.01',
]


MIRRORED = ["DistributeConfig.strategy = 'mirrored'", 'DistributeConfig.num_replicas = 2']


@pytest.fixture
def cli(entry_point):
    """`python -m accel_tf.main`, on gin/accel/ppo_pong.gin unless told another preset."""
    return entry_point('accel_tf.main', 'gin/accel/ppo_pong.gin')


def _preset(name):
    return accel_main.configure([os.path.join(app.PROJECT_ROOT, f'gin/accel/{name}.gin')], [])


def test_a2c_preset_holds_the_papers_values():
    config = _preset('a2c_pong')
    assert (config.algorithm, config.num_envs, config.horizon) == ('a2c', 16, 5)
    assert config.env_config.variant == 'stooke' and config.env_config.observation_shape == (
        104, 80, 4)
    assert config.env_config.downsample == 'average'  # rlpyt's 2x2 mean (gin/accel/atari.gin)
    assert config.network == 'a3c_net' and config.optimizer == 'rmsprop'
    assert config.scaled_learning_rate == pytest.approx(7e-4)  # 16 environments: the base
    gin.clear_config()
    scaled = accel_main.configure([os.path.join(app.PROJECT_ROOT, 'gin/accel/a2c_pong.gin')],
                                  ['AccelConfig.envs_per_worker = 256'])
    assert scaled.scaled_learning_rate == pytest.approx(7e-4 * (512 / 16) ** 0.5)  # ~4e-3
    assert isinstance(kinds.build_learner(config).optimizer, optim.RMSProp)


def test_ppo_presets_hold_the_papers_values():
    config = _preset('ppo_pong')
    phase, loss = config.ppo, config.actor_critic
    assert (config.algorithm, config.num_envs, config.horizon) == ('ppo', 8, 256)
    assert (phase.epochs, phase.minibatches, config.steps_per_update) == (4, 4, 2048)
    assert (config.learning_rate, phase.ratio_clip, loss.gae_lambda) == (2.5e-4, 0.1, 0.95)
    assert config.anneal_learning_rate and phase.anneal_ratio_clip
    assert config.scaled_learning_rate == 2.5e-4 and loss.clip_norm == 0.0
    assert isinstance(kinds.build_learner(config).optimizer, optim.Adam)
    gin.clear_config()
    scaled = _preset('ppo_scaled_pong')
    assert (scaled.num_envs, scaled.horizon, scaled.steps_per_update) == (128, 16, 2048)
    gin.clear_config()
    original = _preset('ppo_original_code_pong')
    loss = original.actor_critic
    assert (original.num_envs, original.horizon, original.steps_per_update) == (32, 64, 2048)
    assert (original.learning_rate, original.ppo.ratio_clip, loss.gae_lambda) == (1e-3, 0.1, 0.98)
    assert (loss.clip_norm, loss.value_loss_coef, original.adam_epsilon) == (1.0, 0.5, 1e-8)
    assert original.anneal_learning_rate and not original.ppo.normalize_advantages
    gin.clear_config()
    assert _preset('pong').algorithm == 'ppo'


A3C_ON_A2C = ['gin/accel/a2c_pong.gin', "AccelConfig.algorithm = 'a3c'"]
APPO = ["AccelConfig.algorithm = 'appo'", 'AccelConfig.anneal_learning_rate = False',
        'PPOConfig.anneal_ratio_clip = False']


@pytest.mark.parametrize('bindings, named', [
    (["AccelConfig.sampler = 'alternating'", 'AccelConfig.num_workers = 3'],
     "sampler='alternating' needs an even num_workers"),
    (['AccelConfig.horizon = 0'], 'AccelConfig.horizon'),
    (["AccelConfig.algorithm = 'trpo'"], "algorithm='trpo'"),
    (["AccelConfig.sampler = 'gpu'"], "sampler='gpu'"),
    (['PPOConfig.minibatches = 3'], 'minibatches=3 must divide the batch'),
    (['ActorCriticConfig.gae_lambda = None'], "algorithm='ppo' needs gae_lambda"),
    (['AccelConfig.envs_per_worker = 0'], 'AccelConfig.envs_per_worker'),
    (["AccelConfig.optimizer = 'sgd'"], "optimizer='sgd'"),
    (["AccelConfig.pin_cpus = 'yes'"], 'AccelConfig.pin_cpus'),
    (['PPOConfig.ratio_clip = 1.5'], 'PPOConfig.ratio_clip'),
    (['RMSProp.epsilon = 0.5'], 'bind AccelConfig.rmsprop_epsilon instead'),
    (APPO + ['AsyncLearnersConfig.num_chunks = 0'], 'AsyncLearnersConfig.num_chunks'),
    (['AccelConfig.num_actor_learners = 0'], 'AccelConfig.num_actor_learners'),
    # One learner but for the asynchronous algorithms: a second would be ignored.
    (['AccelConfig.num_actor_learners = 2'], "AccelConfig.num_actor_learners=2; algorithm='ppo' trains one "
                                       'learner'),
    (A3C_ON_A2C + ["AccelConfig.optimizer = 'adam'"],
     "algorithm='a3c' updates the central store with 'rmsprop' only"),
    (["AccelConfig.algorithm = 'appo'"], 'anneal_learning_rate=True; not available'),
    (["AccelConfig.algorithm = 'appo'", 'AccelConfig.anneal_learning_rate = False'],
     'PPOConfig.anneal_ratio_clip=True; not available'),
    (['DistributeConfig.num_replicas = 2'], "num_replicas=2 needs strategy='mirrored'"),
    (["DistributeConfig.strategy = 'ring'"], "DistributeConfig.strategy='ring'; allowed"),
    (A3C_ON_A2C + ["DistributeConfig.strategy = 'multi_worker'"],
     "strategy='multi_worker' is built for algorithm a2c, ppo, dqn, cat_dqn, rainbow, not "
     "'a3c'"),
    (['gin/accel/dqn_pong.gin', "DistributeConfig.strategy = 'multi_worker'",
      'QValueConfig.asynchronous = True'],
     "QValueConfig.asynchronous=True is not built for DistributeConfig.strategy='multi_worker'"),
    (MIRRORED + ['DistributeConfig.num_replicas = 3'],
     '8 simulators do not split evenly over DistributeConfig.num_replicas=3'),
    # Each replica samples its own simulators with the sampler's groups (2 for alternating).
    (MIRRORED + ["AccelConfig.sampler = 'alternating'", 'AccelConfig.num_workers = 2',
                 'AccelConfig.envs_per_worker = 4'],
     'AccelConfig.num_workers=2 does not split into 4 sampler groups (2 per replica of '
     'DistributeConfig.num_replicas=2'),
    (MIRRORED + ['PPOConfig.minibatches = 2048'],
     'PPO minibatches of 1 do not split evenly over DistributeConfig.num_replicas=2'),
    (A3C_ON_A2C + MIRRORED,
     "strategy='mirrored' is built for algorithm a2c, ppo, dqn, cat_dqn, rainbow, not 'a3c'"),
    (A3C_ON_A2C + ["AsyncLearnersConfig.on_learner_death = 'maybe'"],
     "AsyncLearnersConfig.on_learner_death='maybe'; allowed: ('stop', 'continue')"),
    (APPO + ['APPOConfig.local_steps_per_sync = 3'],
     'local_steps_per_sync=3 must divide the gradient steps per batch'),
    (APPO + ["AccelConfig.sampler = 'alternating'"],
     "AccelConfig.sampler='alternating' is not built for APPO"),
    # A section the algorithm does not read: its bindings would do nothing.
    (['gin/accel/a2c_pong.gin', 'PPOConfig.epochs = 2'],
     "PPOConfig.epochs is bound, but algorithm 'a2c' does not read PPOConfig; remove the "
     'binding'),
    (['gin/accel/dqn_pong.gin', 'ActorCriticConfig.clip_norm = 1.0'],
     "ActorCriticConfig.clip_norm is bound, but algorithm 'dqn' does not read "
     'ActorCriticConfig'),
    (['APPOConfig.pull_every_steps = 16'], "algorithm 'ppo' does not read APPOConfig"),
    (A3C_ON_A2C + ['APPOConfig.local_steps_per_sync = 2'],
     "algorithm 'a3c' does not read APPOConfig"),
    (['QValueConfig.batch_size = 64'], "algorithm 'ppo' does not read QValueConfig"),
    # A binding of the flat AccelConfig before the sections: what to bind instead.
    (['AccelConfig.epochs = 2'], 'AccelConfig.epochs (--gin_bindings=\'AccelConfig.epochs = 2\') '
                                 'is not a binding: bind PPOConfig.epochs instead'),
    (['AccelConfig.clip_norm = 1.0'], 'bind ActorCriticConfig.clip_norm instead'),
    (['AccelConfig.pull_every_steps = 16'], 'bind APPOConfig.pull_every_steps instead'),
    (['AccelConfig.num_chunks = 2'], 'bind AsyncLearnersConfig.num_chunks instead'),
    (['gin/accel/dqn_pong.gin', 'AccelConfig.q_values = @QValueConfig()'],
     'AccelConfig.q_values (--gin_bindings=\'AccelConfig.q_values = @QValueConfig()\') is not a '
     'binding: remove it'),
])
def test_bad_config_is_named_in_one_line(bindings, named):
    """bindings: on gin/accel/ppo_pong.gin unless they start with another gin file."""
    gin_file = 'gin/accel/ppo_pong.gin'
    if bindings[0].endswith('.gin'):
        gin_file, bindings = bindings[0], bindings[1:]
    with pytest.raises(errors.ConfigError) as error:
        accel_main.configure([os.path.join(app.PROJECT_ROOT, gin_file)], bindings)
    message = str(error.value)
    assert named in message and '\n' not in message


def test_an_old_binding_in_an_included_file_says_what_to_bind_instead(tmp_path):
    """A user file of the flat AccelConfig, included by another: gin alone would only say the
    parameter is unknown."""
    old = tmp_path / 'old.gin'
    old.write_text("include 'gin/accel/ppo_pong.gin'\nAccelConfig.minibatches = 8\n")
    (tmp_path / 'mine.gin').write_text(f"include '{old}'\n")
    with pytest.raises(errors.ConfigError) as error:
        accel_main.configure([str(tmp_path / 'mine.gin')], [])
    assert str(error.value) == (
        f'AccelConfig.minibatches ({old}) is not a binding: bind '
        'PPOConfig.minibatches instead (read by algorithm ppo, appo)')


@pytest.mark.slow
@pytest.mark.parametrize('gin_file, extra', [
    ('gin/accel/a2c_pong.gin', []), ('gin/accel/ppo_pong.gin', []),
    # Section 4.2 on 2 logical CPU devices, 2 of the 4 simulators each.
    ('gin/accel/a2c_pong.gin', MIRRORED)])
def test_run_writes_the_run_directory_resumes_and_evaluates(tmp_path, gin_file, extra, cli,
                                                            entry_point):
    first = cli.run(cli.flags(CARTPOLE_BINDINGS + extra, gin_file), cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    if extra:
        assert 'mirrored: 2 replicas on /job:localhost/replica:0/task:0/device:CPU:0, ' \
            '/job:localhost/replica:0/task:0/device:CPU:1' in first.stdout, first.stdout
        # The learning rate of the global batch (App. A.3's rule: 4 simulators, not 2).
        rate = float(run_files.read_csv(tmp_path / 'runs' / os.listdir(tmp_path / 'runs')[0] /
                               'metrics.csv')[-1]['learning_rate'])
        assert rate == pytest.approx(7e-4 * (4 / 16) ** 0.5, rel=1e-5)
    (run_dir,) = [tmp_path / 'runs' / name for name in os.listdir(tmp_path / 'runs')]
    assert run_dir.name.startswith('accel-CartPole-v1-')
    assert {'operative_config.gin', 'metrics.csv', 'episodes.csv', 'checkpoints',
            'invocation.json', 'run.json'} <= set(os.listdir(run_dir))
    rows = run_files.read_csv(run_dir / 'metrics.csv')
    assert int(rows[-1]['env_steps']) == 320
    assert {'steps_per_sec', 'updates_per_sec', 'env_share', 'entropy'} <= set(rows[-1])
    updates = int(rows[-1]['updates'])
    longer = cli.run(cli.flags(CARTPOLE_BINDINGS + extra + ['AccelConfig.total_steps = 640'],
                               gin_file) + [f'--run_dir={run_dir}'], cwd=tmp_path)
    assert longer.returncode == 0, longer.stderr[-3000:]
    assert 'resuming from' in longer.stdout and 'at step 320' in longer.stdout
    rows = run_files.read_csv(run_dir / 'metrics.csv')
    assert int(rows[-1]['env_steps']) == 640 and int(rows[-1]['updates']) == 2 * updates
    evaluation = entry_point('common.evaluate').run(
        [f'--run_dir={run_dir}', '--num_episodes=2'], tmp_path, timeout=120)
    assert evaluation.returncode == 0, evaluation.stderr[-3000:]
    (row,) = run_files.read_csv(run_dir / 'eval.csv')
    assert int(row['episodes']) == 2 and int(row['env_steps']) == 640


@pytest.mark.slow
def test_a_run_dir_of_another_algorithm_is_refused(tmp_path, errors_in, cli):
    first = cli.run(cli.flags(CARTPOLE_BINDINGS) + ['--run_dir=run'], cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    other = cli.run(cli.flags(CARTPOLE_BINDINGS, 'gin/accel/a2c_pong.gin') + ['--run_dir=run'],
                    cwd=tmp_path)
    assert other.returncode == 2
    error_lines = errors_in(other.stderr)
    assert len(error_lines) == 1 and "algorithm: 'ppo' there, 'a2c' here" in error_lines[0]


@pytest.mark.slow
def test_a_run_dir_of_another_model_shape_is_refused_and_an_older_record_is_not(tmp_path,
                                                                                errors_in, cli):
    """run.json records the torso (and the Q-value family's dueling and atoms); a run.json
    written before it did (tests/fixtures/checkpoints/accel_*) is compared on what it holds."""
    torso = "AccelConfig.torso_kwargs = {'hidden_sizes': (16,)}"
    a2c = CARTPOLE_BINDINGS + ['AccelConfig.total_steps = 160', torso]
    first = cli.run(cli.flags(a2c, 'gin/accel/a2c_pong.gin') + ['--run_dir=run'], cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    record = json.loads((tmp_path / 'run' / 'run.json').read_text())
    assert (record['algorithm'], record['torso_kwargs']) == ('a2c', {'hidden_sizes': [16]})
    assert 'dueling' not in record and 'num_atoms' not in record  # Q-value family only
    wider = a2c[:-1] + ["AccelConfig.torso_kwargs = {'hidden_sizes': (32,)}"]
    other = cli.run(cli.flags(wider, 'gin/accel/a2c_pong.gin') + ['--run_dir=run'], cwd=tmp_path)
    assert other.returncode == 2
    (error_line,) = errors_in(other.stderr)  # exactly one
    assert ("torso_kwargs: {'hidden_sizes': [16]} there, {'hidden_sizes': [32]} here"
            in error_line)
    # As a run.json of the code before: without torso_kwargs, the same command resumes.
    del record['torso_kwargs']
    (tmp_path / 'run' / 'run.json').write_text(json.dumps(record))
    longer = cli.run(cli.flags(a2c[:-2] + ['AccelConfig.total_steps = 320', torso],
                               'gin/accel/a2c_pong.gin') + ['--run_dir=run'], cwd=tmp_path)
    assert longer.returncode == 0, longer.stderr[-3000:]
    assert 'resuming from' in longer.stdout and 'at step 160' in longer.stdout


@pytest.mark.slow
@pytest.mark.parametrize('sampler', ['synchronized', 'alternating'])
def test_pong_runs_through_each_sampler_and_leaves_nothing_behind(tmp_path, sampler, process_tree,
                                                                  cli):
    shm_before = process_tree.shm_entries()
    result = cli.run(cli.flags([f"AccelConfig.sampler = '{sampler}'",
                                'AccelConfig.envs_per_worker = 2', 'AccelConfig.horizon = 8',
                                'AccelConfig.total_steps = 64', 'PPOConfig.minibatches = 2',
                                'PPOConfig.epochs = 1', 'AtariConfig.decorrelation_steps = 20']) +
                     ['--run_dir=run'], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert int(run_files.read_csv(tmp_path / 'run' / 'metrics.csv')[-1]['env_steps']) == 64
    assert not process_tree.leaked_shm(shm_before)


@pytest.mark.slow
def test_bench_rows_sample_with_inference_through_both_samplers():
    from accel_tf import bench_rows
    settings = {'seconds': 0.5, 'warmup_seconds': 0.0, 'num_envs': 4, 'game': 'pong',
                'num_workers': 2}
    for name in ('accel/sample/sync', 'accel/sample/alternating', 'accel/a2c'):
        gin.clear_config()
        result = bench_rows.ROWS[name](settings)
        assert result['steps_per_sec'] > 0, name
        assert result['min'] <= result['median'] <= result['max']
        if name.startswith('accel/sample/'):
            # The wall time of one time step of the 4 simulators, split: it adds up, and the
            # simulators and the policy each take some of it.
            part_ms = result['part_ms']
            assert set(part_ms) == {'env', 'act', 'other'}
            assert part_ms['env'] > 0 and part_ms['act'] > 0 and part_ms['other'] >= 0
            step_ms = 1e3 * 4 / result['steps_per_sec']
            assert sum(part_ms.values()) == pytest.approx(step_ms)
    assert gin.query_parameter('AccelConfig.envs_per_worker') == 2  # 4 environments over 2


def _count_timed_calls(monkeypatch, bench_rows):
    """Makes the bench's timing loop record steps_per_call at every call it times (warm-up
    included); returns that list."""
    calls = []
    real_rate = bench_rows.timing.rate

    def counting_rate(step_fn, steps_per_call, seconds, warmup_seconds):
        def step():
            calls.append(steps_per_call)
            step_fn()
        return real_rate(step, steps_per_call, seconds, warmup_seconds)

    monkeypatch.setattr(bench_rows.timing, 'rate', counting_rate)
    return calls


def test_learning_only_row_times_updates_on_one_collected_rollout(monkeypatch):
    from accel_tf import bench_rows
    calls = _count_timed_calls(monkeypatch, bench_rows)
    settings = {'seconds': 0.5, 'warmup_seconds': 0.0, 'num_envs': 4, 'game': 'pong',
                'num_workers': 2}
    gin.clear_config()
    learner = {}
    real_build = bench_rows.kinds.build_learner

    def remember(config):
        learner['object'] = real_build(config)
        return learner['object']

    monkeypatch.setattr(bench_rows.kinds, 'build_learner', remember)
    result = bench_rows.ROWS['accel/a2c/learn'](settings)
    assert result['steps_per_sec'] > 0
    assert set(calls) == {4 * 5}  # one call trains on a 4-environment x horizon 5 rollout
    # every call was an update: the optimizer stepped once per timed call
    assert int(learner['object'].optimizer.iterations.numpy()) == len(calls)


@pytest.mark.slow
@pytest.mark.parametrize('row, owed', [('accel/rainbow_512', 0), ('accel/dqn_512/async', 1)])
def test_q_bench_rows_hold_training_intensity_8_once_replay_can_train(monkeypatch, row, owed):
    from accel_tf import bench_rows
    calls = _count_timed_calls(monkeypatch, bench_rows)
    phases_made = []
    real_make_phases = bench_rows.q_family.make_phases

    def remember(*args, **kwargs):
        manager = real_make_phases(*args, **kwargs)
        phases_made.append(getattr(manager, 'thing', manager))  # contextlib.closing or the phases
        return manager

    monkeypatch.setattr(bench_rows.q_family, 'make_phases', remember)
    settings = {'seconds': 0.5, 'warmup_seconds': 0.0, 'num_envs': 4, 'game': 'pong',
                'num_workers': 2}
    gin.clear_config()
    result = bench_rows.ROWS[row](settings)
    assert result['steps_per_sec'] > 0
    # Batch 512 over 4 simulators: horizon 16 (64 steps a phase), one update of 512 per phase.
    assert set(calls) == {64}
    phases = phases_made[0]
    assert phases.settings.batch_size == 512 and phases.settings.updates_per_phase == 1
    assert phases.settings.updates_per_phase * 512 / 64 == 8  # training intensity
    assert len(phases.memory) >= 4096
    # Every timed phase trained, and so did the fill's last phase (it reached 4,096 steps),
    # but for the phases still owed when an asynchronous row stops.
    updates = int(phases.learner.optimizer.iterations.numpy())
    assert len(calls) + 1 - owed <= updates <= len(calls) + 1


@pytest.mark.slow
def test_async_bench_rows_count_both_learners_steps(process_tree):
    from accel_tf import bench_rows
    settings = {'seconds': 1.0, 'warmup_seconds': 0.0, 'num_envs': 8, 'game': 'pong',
                'num_workers': 2}
    shm_before = process_tree.shm_entries()
    # accel/appo's function, with a short horizon and one epoch of 2 minibatches.
    rows = {'accel/a3c': bench_rows.ROWS['accel/a3c'],
            'accel/appo': lambda settings: bench_rows.async_rate(settings, 'appo_pong', [
                'AccelConfig.horizon = 16', 'PPOConfig.minibatches = 2',
                'PPOConfig.epochs = 1'])}
    for name, row in rows.items():
        gin.clear_config()
        result = row(settings)
        assert result['steps_per_sec'] > 0, name
        assert result['min'] <= result['median'] <= result['max']
        assert gin.query_parameter('AccelConfig.num_actor_learners') == 2
        assert gin.query_parameter('AccelConfig.envs_per_worker') == 2  # 8 over 2 x 2 workers
    assert not process_tree.leaked_shm(shm_before)


@pytest.mark.parametrize('gpus, hidden', [([], True), (['0'], True), (['0', '1'], False)])
def test_the_mirrored_bench_row_runs_on_cpu_devices_unless_each_replica_has_a_gpu(
        monkeypatch, gpus, hidden):
    """A run refuses more mirrored replicas than GPUs; the bench row, defined as the machinery's
    overhead, puts its 2 replicas on logical CPU devices instead (GPUs hidden) on a 1-GPU host."""
    from accel_tf import bench_rows  # pylint: disable=import-outside-toplevel
    calls = []
    monkeypatch.setattr(bench_rows.devices, 'gpu_ids', lambda: list(gpus))
    monkeypatch.setattr(bench_rows.devices, 'hide_gpus_here', lambda: calls.append('hidden'))
    monkeypatch.setattr(bench_rows, 'training_rate',
                        lambda settings, preset, extra: calls.append((preset, tuple(extra))))
    bench_rows.ROWS['accel/a2c/mirrored2']({})
    assert calls[-1] == ('a2c_pong', ("DistributeConfig.strategy = 'mirrored'",
                                      'DistributeConfig.num_replicas = 2'))
    assert ('hidden' in calls) == hidden


def test_num_learners_is_read_as_num_actor_learners_with_a_notice(capsys):
    """A learner is the object that updates; each asynchronous process iterates an
    actor-learner (docs/code_map.md, Words): the old name still works, said in one line."""
    capsys.readouterr()
    preset = os.path.join(app.PROJECT_ROOT, 'gin', 'accel', 'a3c_pong.gin')
    config = accel_main.configure([preset], ['AccelConfig.num_learners = 3'])
    assert config.num_actor_learners == 3
    assert capsys.readouterr().err.splitlines() == [
        "warning: AccelConfig.num_learners (--gin_bindings='AccelConfig.num_learners = 3') is "
        'read as AccelConfig.num_actor_learners, its name now']
