"""`python -m paac_tf.main` end to end: presets, run directory, resume, evaluation, Atari (its
bad bindings and a missing gin file: tests/test_entry_points.py)."""
import json
import os
import re
import signal
import subprocess
import time

import gin
import pytest
import tensorflow as tf

from common.envs import atari
from common.launch import app
from common.tools import run_files
from paac_tf import main as paac_main
from paac_tf import paac

CARTPOLE_BINDINGS = [
    "PAACConfig.env_config = @GymConfig()",
    "GymConfig.env_id = 'CartPole-v1'",
    "PAACConfig.network = 'mlp'",
    "PAACConfig.num_envs = 4",
    "PAACConfig.num_workers = 2",
    "PAACConfig.total_steps = 400",
    "PAACConfig.checkpoint_every_steps = 200",
    "PAACConfig.log_every_seconds = 0.01",
]


@pytest.fixture
def cli(entry_point):
    """`python -m paac_tf.main`, on gin/paac/paper.gin unless told another preset."""
    return entry_point('paac_tf.main', 'gin/paac/paper.gin')


def test_presets_parse_and_hold_the_papers_values():
    config = paac_main.configure([os.path.join(app.PROJECT_ROOT, 'gin/paac/pong.gin')], [])
    assert (config.num_envs, config.num_workers, config.horizon) == (32, 8, 5)
    assert config.learning_rate == pytest.approx(0.0007 * 32)
    assert (config.entropy_coef, config.clip_norm, config.gamma) == (0.01, 40.0, 0.99)
    assert (config.rmsprop_decay, config.rmsprop_epsilon) == (0.99, 0.1)
    # TF1's RMSPropOptimizer: epsilon inside the sqrt, mean squares starting at ones.
    assert paac.build_learner(config).optimizer.initial_mean_square == 1.0
    assert paac.build_learner(config).optimizer.epsilon_inside_sqrt is True
    assert config.network == 'nips' and config.env_config.game == 'pong'
    # The loss and initialization of the code that produced the paper's scores (alfredvc/paac).
    assert (config.loss_scale, config.value_loss_coef) == (5.0, 0.25)
    assert config.initializer == 'fan_in_uniform'
    original = paac_main.configure(
        [os.path.join(app.PROJECT_ROOT, 'gin/paac/original_code.gin')], [])
    assert (original.entropy_coef, original.clip_norm, original.anneal_steps) == (
        0.02, 3.0, 80_000_000)
    assert (config.env_config.resize, original.env_config.resize) == ('area', 'nearest')


def test_the_papers_old_name_t_max_is_read_as_horizon():
    """PAACConfig.t_max, the paper's tmax, became horizon (the word every config uses); a user's
    binding of the old name keeps working."""
    config = paac_main.configure([os.path.join(app.PROJECT_ROOT, 'gin/paac/pong.gin')],
                                 ['PAACConfig.t_max = 7'])
    assert config.horizon == 7


@pytest.mark.slow
def test_run_writes_the_run_directory_and_rerun_resumes(tmp_path, cli, entry_point):
    first = cli.run(cli.flags(CARTPOLE_BINDINGS), cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    (run_dir,) = [tmp_path / 'runs' / name for name in os.listdir(tmp_path / 'runs')]
    assert run_dir.name.startswith('paac-CartPole-v1-')
    names = set(os.listdir(run_dir))
    assert {'operative_config.gin', 'metrics.csv', 'episodes.csv', 'checkpoints',
            'invocation.json'} <= names
    assert any(name.startswith('events.') for name in names)
    assert 'PAACConfig.num_envs = 4' in (run_dir / 'operative_config.gin').read_text()
    rows = run_files.read_csv(run_dir / 'metrics.csv')
    assert int(rows[-1]['env_steps']) == 400
    assert {'env_share', 'act_share', 'learn_share', 'steps_per_sec'} <= set(rows[-1])
    shares = [float(rows[-1][name]) for name in ('env_share', 'act_share', 'learn_share')]
    assert all(0 < share < 1 for share in shares) and sum(shares) <= 1.0 + 1e-6
    assert 'steps 400/400' in first.stdout
    episodes_before = len(run_files.read_csv(run_dir / 'episodes.csv'))
    assert episodes_before > 0

    # The same command resumes (nothing to do); more steps continue from 400.
    again = cli.run(cli.flags(CARTPOLE_BINDINGS), cwd=tmp_path)
    assert again.returncode == 0 and 'already complete' in again.stdout
    longer = cli.run(cli.flags(CARTPOLE_BINDINGS + ['PAACConfig.total_steps = 800']) +
                     [f'--run_dir={run_dir}'], cwd=tmp_path)
    assert longer.returncode == 0, longer.stderr[-3000:]
    assert 'resuming from' in longer.stdout and 'at step 400' in longer.stdout
    rows = run_files.read_csv(run_dir / 'metrics.csv')
    steps = [int(row['env_steps']) for row in rows]
    assert steps == sorted(steps) and steps[-1] == 800
    assert int(rows[-1]['updates']) == 800 // 20  # the optimizer's count was restored too
    assert len(run_files.read_csv(run_dir / 'episodes.csv')) > episodes_before
    assert (run_dir / 'operative_config.gin').read_text().count('total_steps = 400') == 1
    # run.json: the identity once, then one record per session that started or resumed it.
    record = json.loads((run_dir / 'run.json').read_text())
    assert (record['paper'], record['env'], record['network']) == ('paac', 'CartPole-v1', 'mlp')
    sessions = record['sessions']
    assert len(sessions) == 3  # the first run, the complete rerun, the longer one
    head = subprocess.run(['git', '-C', app.PROJECT_ROOT, 'rev-parse', 'HEAD'],
                          capture_output=True, text=True, check=False).stdout.strip()
    assert sessions[-1]['code'].get('git_commit') == (head or None)
    assert sessions[-1]['libraries']['tensorflow'] == tf.__version__
    assert sessions[-1]['machine']['usable_cores'] >= 1

    evaluation = entry_point('common.evaluate').run(
        [f'--run_dir={run_dir}', '--num_episodes=3'], tmp_path, timeout=120)
    assert evaluation.returncode == 0, evaluation.stderr[-3000:]
    (row,) = run_files.read_csv(run_dir / 'eval.csv')
    assert int(row['episodes']) == 3 and int(row['env_steps']) == 800
    assert float(row['score_min']) <= float(row['score_mean']) <= float(row['score_max'])


@pytest.mark.slow
def test_a_run_its_ctrl_c_and_its_resume_print_no_warning(tmp_path, process_tree, cli):
    """What a user sees on stderr, from a shell that set nothing: start, log, checkpoint, Ctrl-C
    and resume print no library or deprecation warning (TensorFlow's update_checkpoint_state
    did, twice), only the run's own 'interrupted'."""
    env = {key: value for key, value in os.environ.items()
           if key not in ('TF_CPP_MIN_LOG_LEVEL', 'COMMON_QUIET_TENSORFLOW',
                          'TF_USE_LEGACY_KERAS', 'TF_ENABLE_ONEDNN_OPTS')}
    env['PYTHONPATH'] = app.PROJECT_ROOT
    command = cli.command(['--run_dir=run'] + cli.flags(
        CARTPOLE_BINDINGS[:-3] + ['PAACConfig.checkpoint_every_steps = 200',
                                  'PAACConfig.log_every_seconds = 0.2']))
    first = subprocess.run(command + ['--gin_bindings=PAACConfig.total_steps = 400'],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert first.returncode == 0 and first.stderr == '', first.stderr[-3000:]
    process = subprocess.Popen(command + ['--gin_bindings=PAACConfig.total_steps = 100000000'],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    metrics = tmp_path / 'run' / 'metrics.csv'
    assert process_tree.wait_for(
        lambda: int(run_files.read_csv(metrics)[-1]['env_steps']) > 400, 120)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode != 0 and 'resuming from' in stdout
    assert stderr.strip() == 'interrupted', stderr[-3000:]
    saved = int(re.search(r'interrupted at step ([\d,]+); saved', stdout).group(1).replace(
        ',', ''))
    resumed = subprocess.run(command + [f'--gin_bindings=PAACConfig.total_steps = {saved + 200}'],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert resumed.returncode == 0 and resumed.stderr == '', resumed.stderr[-3000:]
    assert f'at step {saved:,}' in resumed.stdout


@pytest.mark.slow
def test_pong_runs_through_worker_processes_and_leaves_nothing_behind(tmp_path, process_tree,
                                                                     cli):
    shm_before = process_tree.shm_entries()
    log = tmp_path / 'stderr.txt'
    with open(log, 'w') as stderr:  # a file, not a pipe: nobody reads while the loop polls
        process = cli.start(cli.flags(["AtariConfig.game = 'pong'", 'PAACConfig.num_envs = 4',
                                       'PAACConfig.num_workers = 2', 'PAACConfig.total_steps = 60',
                                       'PAACConfig.horizon = 5']) + ['--run_dir=run'],
                            tmp_path, stdout=subprocess.DEVNULL, stderr=stderr)
        workers = set()
        deadline = time.monotonic() + 240
        while process.poll() is None and time.monotonic() < deadline:  # its own workers, seen
            workers.update(process_tree.spawned_children(process.pid))  # while it runs
            time.sleep(0.05)
        process.wait(timeout=5)
    assert process.returncode == 0, log.read_text()[-3000:]
    assert int(run_files.read_csv(tmp_path / 'run' / 'metrics.csv')[-1]['env_steps']) == 60
    assert len(workers) == 2
    assert process_tree.wait_for(lambda: not process_tree.alive(workers), 15)
    assert not process_tree.leaked_shm(shm_before)


@pytest.mark.slow
def test_a_killed_worker_ends_the_run_with_one_line_and_a_checkpoint(tmp_path, process_tree,
                                                                    cli):
    shm_before = process_tree.shm_entries()
    process = cli.start(cli.flags(CARTPOLE_BINDINGS[:-2] + [
        'PAACConfig.total_steps = 100000000', 'PAACConfig.log_every_seconds = 0.5']) +
        ['--run_dir=run'], tmp_path)
    metrics = tmp_path / 'run' / 'metrics.csv'
    assert process_tree.wait_for(
        lambda: metrics.exists() and len(run_files.read_csv(metrics)) >= 2, 120)
    workers = process_tree.spawned_children(process.pid)
    assert len(workers) == 2
    os.kill(workers[0], signal.SIGKILL)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 1, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    assert last.startswith('error: ProcessPool worker') and 'was killed by signal SIGKILL' in last
    assert 'saved' in last and 'Traceback' not in stderr
    steps = int(re.search(r'run stopped at step ([\d,]+), saved', last).group(1).replace(',', ''))
    assert os.path.exists(tmp_path / 'run' / 'checkpoints' / f'ckpt-{steps}.index')
    assert steps >= int(run_files.read_csv(metrics)[-1]['env_steps'])
    assert process_tree.wait_for(lambda: not process_tree.alive(workers), 15)
    assert not process_tree.leaked_shm(shm_before)


@pytest.mark.slow
def test_a_lost_checkpoint_index_resumes_from_the_newest_checkpoint_file(tmp_path, cli):
    """rm RUN/checkpoints/checkpoint used to restart the run from step 0 without a word."""
    first = cli.run(cli.flags(CARTPOLE_BINDINGS) + ['--run_dir=run'], cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    os.remove(tmp_path / 'run' / 'checkpoints' / 'checkpoint')
    longer = cli.run(cli.flags(CARTPOLE_BINDINGS + ['PAACConfig.total_steps = 600']) +
                     ['--run_dir=run'], cwd=tmp_path)
    assert longer.returncode == 0, longer.stderr[-3000:]
    assert 'missing or unreadable' in longer.stderr
    assert 'resuming from' in longer.stdout and 'at step 400' in longer.stdout
    steps = [int(row['env_steps']) for row in run_files.read_csv(tmp_path / 'run' / 'metrics.csv')]
    assert steps == sorted(steps) and steps[-1] == 600


@pytest.mark.slow
def test_a_run_dir_of_another_game_is_refused_before_anything_is_written(tmp_path, errors_in,
                                                                         cli):
    first = cli.run(cli.flags(CARTPOLE_BINDINGS) + ['--run_dir=run'], cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    before = sorted(os.listdir(tmp_path / 'run'))
    other = cli.run(cli.flags(CARTPOLE_BINDINGS + ["GymConfig.env_id = 'Acrobot-v1'"]) +
                    ['--run_dir=run'], cwd=tmp_path)
    assert other.returncode == 2
    errors = errors_in(other.stderr)
    assert len(errors) == 1 and "env: 'CartPole-v1' there, 'Acrobot-v1' here" in errors[0]
    assert sorted(os.listdir(tmp_path / 'run')) == before  # no invocation.resume-*.json


@pytest.mark.slow
def test_bench_row_measures_the_pong_preset_with_its_own_worker_count():
    from paac_tf import bench_rows
    settings = {'seconds': 0.5, 'warmup_seconds': 0.0, 'num_envs': 8, 'game': 'pong',
                'num_workers': 1}  # the env rows' --num_workers: not the preset's nw
    try:
        result = bench_rows.paac_rate(settings)
        workers = gin.query_parameter('PAACConfig.num_workers')
    finally:
        gin.clear_config()
    assert workers == 8  # gin/paac/paper.gin's nw (paac/auto_workers: num_workers 'auto')
    assert result['steps_per_sec'] > 0
    assert result['min'] <= result['median'] <= result['max']


@pytest.mark.slow
def test_a_diverging_run_stops_with_one_line_and_keeps_the_checkpoint_before(
        tmp_path, finite_checkpoints, diverged_run, cli):
    """At a learning rate of 1e30 the first update leaves huge but finite weights (checkpointed
    at step 20) and the second one's loss overflows: the run stops with one line naming the
    update and the step, after the row that shows nan, and writes no checkpoint of the diverged
    weights (a learning rate of 1000 on Pong used to train on in NaN and checkpoint it)."""
    result = cli.run(cli.flags(CARTPOLE_BINDINGS + [
        'PAACConfig.learning_rate = 1e30', 'PAACConfig.checkpoint_every_steps = 20',
        'PAACConfig.log_every_seconds = 1e-6']) + ['--run_dir=run'], cwd=tmp_path)
    error, steps = diverged_run(result, tmp_path / 'run')
    kept = finite_checkpoints(tmp_path / 'run')
    assert 20 in kept and max(kept) < steps and all(kept.values()), kept
    assert f'ckpt-{max(kept)}, stays' in error


def _fill(directory):
    """Writes a file into directory until its file system is full."""
    with open(os.path.join(directory, 'filler'), 'wb', buffering=0) as f:
        try:
            while True:
                f.write(b'\0' * 4096)
        except OSError:
            pass


def _one_line_error(result):
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0 and len(lines) == 1, result.stderr[-3000:]
    assert lines[0].startswith('error: ') and 'Traceback' not in result.stderr
    return lines[0]


@pytest.mark.slow
def test_a_full_or_read_only_disk_ends_the_run_in_one_line_and_keeps_what_it_wrote(small_disk,
                                                                                   cli):
    """A small file system, full when a finished run is extended, then read-only: each time one
    line naming the path and the cause; the checkpoints written before stay and restore."""
    tiny_disk = small_disk('8m')
    run_dir = os.path.join(tiny_disk, 'run')
    bindings = CARTPOLE_BINDINGS + ['PAACConfig.total_steps = 200',
                                    'PAACConfig.log_every_seconds = 1000.0']
    finished = cli.run(cli.flags(bindings) + [f'--run_dir={run_dir}'], tiny_disk)
    assert finished.returncode == 0, finished.stderr[-3000:]
    checkpoints = os.listdir(os.path.join(run_dir, 'checkpoints'))
    _fill(tiny_disk)
    longer = cli.flags(bindings[:-2] + ['PAACConfig.total_steps = 100000']) + [
        f'--run_dir={run_dir}']
    line = _one_line_error(cli.run(longer, tiny_disk))
    assert 'No space left on device' in line and tiny_disk in line
    assert not any(name.endswith('_temp') for name in
                   os.listdir(os.path.join(run_dir, 'checkpoints')))
    os.remove(os.path.join(tiny_disk, 'filler'))
    subprocess.run(['mount', '-o', 'remount,ro', tiny_disk], check=True)
    line = _one_line_error(cli.run(longer, tiny_disk))
    assert 'Read-only file system' in line and tiny_disk in line
    assert set(checkpoints) <= set(os.listdir(os.path.join(run_dir, 'checkpoints')))
    subprocess.run(['mount', '-o', 'remount,rw', tiny_disk], check=True)
    resumed = cli.run(cli.flags(bindings[:-2] + ['PAACConfig.total_steps = 400']) +
                      [f'--run_dir={run_dir}'], tiny_disk)
    assert resumed.returncode == 0 and 'resuming from' in resumed.stdout, resumed.stderr[-3000:]


@pytest.mark.slow
def test_a_resume_with_another_batch_says_so_and_continues_the_schedule_by_env_steps(tmp_path,
                                                                                    cli):
    """The learning rate anneals over env steps: 0.01 -> 0 over 800. A first session of 200
    steps at 4 x 5 per update, a second at 8 x 5: the second's first update is at 200 steps,
    rate 0.0075, whatever the batch (by update counts it would be at 10 of 20 updates, 0.005)."""
    bindings = CARTPOLE_BINDINGS + ['PAACConfig.learning_rate = 0.01',
                                    'PAACConfig.final_learning_rate = 0.0',
                                    'PAACConfig.anneal_steps = 800',
                                    'PAACConfig.log_every_seconds = 0.000001']
    first = cli.run(cli.flags(bindings + ['PAACConfig.total_steps = 200']) + ['--run_dir=run'],
                    tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    second = cli.run(cli.flags(bindings + ['PAACConfig.total_steps = 400',
                                           'PAACConfig.num_envs = 8']) + ['--run_dir=run'],
                     tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    changed = [line for line in second.stdout.splitlines() if line.startswith('resuming with')]
    assert changed == ['resuming with 2 changed binding(s): PAACConfig.num_envs: 4 -> 8; '
                       'PAACConfig.total_steps: 200 -> 400']
    rows = run_files.read_csv(tmp_path / 'run' / 'metrics.csv')
    resumed = [row for row in rows if int(row['env_steps']) > 200]
    # Each row is one update; its rate is the schedule's at the steps before that update.
    for row in resumed:
        before = int(row['env_steps']) - 40
        assert float(row['learning_rate']) == pytest.approx(0.01 * (1 - before / 800), rel=1e-4)
    assert float(resumed[0]['learning_rate']) == pytest.approx(0.0075, rel=1e-4)


@pytest.mark.slow
def test_a_preset_changed_under_a_run_does_not_change_its_environment_on_resume(tmp_path,
                                                                                 cli):
    """The same command after its preset changed a GymConfig field: refused in one line, the
    run directory untouched; binding the field on the command line resumes with it."""
    preset = tmp_path / 'mine.gin'
    lines = [f'include {os.path.join(app.PROJECT_ROOT, "gin/paac/paper.gin")!r}'] + [
        binding for binding in CARTPOLE_BINDINGS if 'total_steps' not in binding]
    preset.write_text('\n'.join(lines + ['GymConfig.max_episode_steps = 200',
                                         'PAACConfig.total_steps = 200']) + '\n')
    command = [f'--gin_file={preset}', '--run_dir=run']
    first = cli.run(command, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    preset.write_text('\n'.join(lines + ['GymConfig.max_episode_steps = 100',
                                         'PAACConfig.total_steps = 400']) + '\n')
    before = {name: os.path.getmtime(tmp_path / 'run' / name)
              for name in os.listdir(tmp_path / 'run')}
    line = _one_line_error(cli.run(command, tmp_path))
    assert 'GymConfig.max_episode_steps = 200, now 100' in line
    assert {name: os.path.getmtime(tmp_path / 'run' / name)
            for name in os.listdir(tmp_path / 'run')} == before
    bound = cli.run(command + ['--gin_bindings=GymConfig.max_episode_steps = 100'], tmp_path)
    assert bound.returncode == 0, bound.stderr[-3000:]
    assert 'resuming from' in bound.stdout and 'GymConfig.max_episode_steps: 200 -> 100' in (
        bound.stdout)
