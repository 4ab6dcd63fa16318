"""RunConfig.seed_exact: two runs of the same preset and seed on the same machine write the same
steps, episodes, scores and losses (metrics.csv and episodes.csv, every column but the clocks and
rates) for the synchronous methods (PAAC, A2C and PPO, fast DQN without its concurrent
training), on CartPole and on 20k Pong steps; refused in one line where threads or processes
decide what trains."""
import os
import subprocess
import sys

import pytest

from common.launch import app
from common.system import errors
from common.tools import run_files

# Columns that are the clock's, not the run's: they differ between any two runs.
TIMED = ('wall_time', 'steps_per_sec', 'updates_per_sec', 'load_1m', 'run_cpu_cores',
         'steal_pct', 'rss_mb')


def _deterministic(row):
    return {name: value for name, value in row.items()
            if name not in TIMED and not name.endswith('_share')}


def _records(run_dir):
    metrics = [_deterministic(row) for row in run_files.read_csv(run_dir / 'metrics.csv')]
    episodes = [{name: row[name] for name in ('env_steps', 'score', 'length')}
                for row in run_files.read_csv(run_dir / 'episodes.csv')]
    return metrics, episodes


def _twice(command, tmp_path):
    env = dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)
    records = []
    for name in ('first', 'second'):
        result = subprocess.run(command + [f'--run_dir={name}'], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        records.append(_records(tmp_path / name))
    return records


CASES = {
    'paac': [],
    'accel': [],  # PPO, the accelerated methods' pong.gin
    'accel-a2c': ['@a2c'],
    'dqn-synchronized': ['{config}.concurrent = False'],
    'dqn-standard': ['{config}.concurrent = False', '{config}.synchronized = False'],
}


@pytest.mark.slow
@pytest.mark.parametrize('case', sorted(CASES))
def test_two_runs_of_a_seed_write_the_same_steps_episodes_scores_and_losses(
        case, tmp_path, cartpole_command):
    paper = case.split('-')[0]
    bindings = [binding for binding in CASES[case] if not binding.startswith('@')]
    command = cartpole_command(paper, bindings + [
        '{config}.seed_exact = True', '{config}.log_every_steps = 200',
        '{config}.total_steps = 3000', '{config}.seed = 3'])
    if '@a2c' in CASES[case]:
        command[3] = f'--gin_file={os.path.join(app.PROJECT_ROOT, "gin", "accel", "a2c_pong.gin")}'
    first, second = _twice(command, tmp_path)
    metrics, episodes = first
    assert len(metrics) >= 10 and len(episodes) >= 10
    steps = [int(row['env_steps']) for row in metrics]
    # A row at the first boundary at or past each multiple of 200 steps (and one at the end).
    buckets = [step // 200 for step in steps[:-1]]
    assert steps[-1] >= 3000 and buckets == sorted(set(buckets)), steps
    assert any(row.get('loss') not in (None, '') for row in metrics)
    assert second == first


@pytest.mark.slow
def test_twenty_thousand_pong_steps_of_paac_are_the_same_twice(tmp_path):
    command = [sys.executable, '-m', 'paac_tf.main',
               f'--gin_file={os.path.join(app.PROJECT_ROOT, "gin", "paac", "pong.gin")}',
               '--gin_bindings=PAACConfig.seed_exact = True',
               '--gin_bindings=PAACConfig.log_every_steps = 2000',
               '--gin_bindings=PAACConfig.total_steps = 20000',
               '--gin_bindings=PAACConfig.checkpoint_every_steps = 100000000',
               '--gin_bindings=PAACConfig.num_envs = 8',  # 2,500 steps each: episodes end
               '--gin_bindings=PAACConfig.num_workers = 2']
    first, second = _twice(command, tmp_path)
    assert len(first[0]) >= 10 and int(first[0][-1]['env_steps']) >= 20000
    assert first[1], 'no Pong episode ended in 20k steps'
    assert second == first


@pytest.mark.parametrize('paper, bindings, named', [
    ('ga3c', [], 'GA3CConfig.seed_exact=True: GA3C'),
    ('accel', ["AccelConfig.algorithm = 'a3c'"], "algorithm='a3c' runs asynchronous"),
    ('accel', ['AccelConfig.overlap_learning = True'], 'overlap_learning=True trains on a thread'),
    ('dqn', [], 'DQNConfig.seed_exact=True: concurrent=True'),
    ('paac', ['PAACConfig.log_every_steps = 0'], 'needs PAACConfig.log_every_steps > 0'),
])
def test_seed_exact_is_refused_where_it_cannot_hold(paper, bindings, named):
    import importlib  # pylint: disable=import-outside-toplevel
    configure = importlib.import_module(f'{paper}_tf.main').configure
    owner = {'paac': 'PAACConfig', 'ga3c': 'GA3CConfig', 'dqn': 'DQNConfig',
             'accel': 'AccelConfig'}[paper]
    preset = os.path.join(app.PROJECT_ROOT, 'gin', paper, 'pong.gin')
    if 'a3c' in ''.join(bindings):
        preset = os.path.join(app.PROJECT_ROOT, 'gin', 'accel', 'a3c_pong.gin')
        bindings = []
    with pytest.raises(errors.ConfigError) as raised:
        configure([preset], [f'{owner}.seed_exact = True', f'{owner}.log_every_steps = 1000']
                  + bindings)
    assert named in str(raised.value) and '\n' not in str(raised.value)
