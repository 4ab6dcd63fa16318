"""`python -m common.sweep`: a preset over a grid of bindings at a tiny scale (two points, a few
hundred CartPole steps each): the figures and the table are written, a rerun resumes the
unfinished point and skips finished ones, bad grids are refused in one line."""
import os
import subprocess
import sys

import pytest

from common import sweep
from common.launch import app
from common.tools import run_files

PRESET = os.path.join(app.PROJECT_ROOT, 'gin', 'paac', 'paper.gin')
CARTPOLE = ['PAACConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'",
            "PAACConfig.network = 'mlp'", 'PAACConfig.num_workers = 1',
            "make_pool.kind = 'serial'", 'PAACConfig.total_steps = 100000',
            'PAACConfig.log_every_seconds = 0.01', 'PAACConfig.learning_rate_per_env = 0.0007']
GRID = '--grid=PAACConfig.num_envs = [4, 8]'


def _env():
    return dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)


def _flags(bindings=CARTPOLE):
    return [f'--gin_file={PRESET}'] + [f'--gin_bindings={binding}' for binding in bindings]


def _sweep(args, cwd):
    return subprocess.run([sys.executable, '-m', 'common.sweep'] + args, cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=300)


def test_grid_points_are_the_product_of_the_axes_named_by_parameter_and_value():
    axes = [sweep.parse_axis('PAACConfig.num_envs = [16, 64]'),
            sweep.parse_axis("PAACConfig.network = ['nips', 'nature']")]
    points = sweep.grid_points(axes, None)
    assert [name for name, _ in points] == ['num_envs-16_network-nips',
                                           'num_envs-16_network-nature',
                                           'num_envs-64_network-nips',
                                           'num_envs-64_network-nature']
    assert points[1][1] == ['PAACConfig.num_envs = 16', "PAACConfig.network = 'nature'"]
    named = sweep.grid_points(axes[:1], ['ne16', 'ne64'])
    assert named == [('ne16', ['PAACConfig.num_envs = 16']), ('ne64', ['PAACConfig.num_envs = 64'])]


@pytest.mark.slow
@pytest.mark.parametrize('args, named', [
    (['--grid=PAACConfig.num_envs = 16', '--steps=100'], "--grid='PAACConfig.num_envs = 16'"),
    (['--grid=PAACConfig.num_envs = [16, x]', '--steps=100'], 'not a list of values'),
    ([GRID, '--steps=0'], '--steps=0'),
    ([GRID, '--steps=100', '--names=a'], '--names gives 1 names for 2 grid points'),
    (['--grid=PAACConfig.num_envs = [4, 0]', '--steps=100'], 'num_envs'),
    ([GRID, '--steps=100', '--stop_at_minutes=0'], '--stop_at_minutes=0.0: must be a positive'),
])
def test_bad_grids_are_refused_in_one_line_before_anything_starts(tmp_path, args, named):
    result = _sweep(_flags() + args + ['--sweep_dir=sweep'], tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], result.stderr[-2000:]
    assert not os.path.exists(tmp_path / 'sweep')


@pytest.mark.slow
def test_two_points_resume_skip_and_draw_the_views(tmp_path):
    args = _flags() + [GRID, '--steps=200', '--sweep_dir=sweep', '--thresholds=10,1000']
    # The second point begun outside the sweep and stopped at 80 steps: the sweep resumes it.
    partial = subprocess.run(
        [sys.executable, '-m', 'paac_tf.main'] + _flags(CARTPOLE + ['PAACConfig.num_envs = 8'])
        + ['--stop_at_steps=80', '--run_dir=sweep/num_envs-8'],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=240)
    assert partial.returncode == 0, partial.stderr[-3000:]
    first = _sweep(args, tmp_path)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert '[1/2 num_envs-4] point 1 of 2 (PAACConfig.num_envs = 4): training to 200' in first.stdout
    assert '(resuming at 80)' in first.stdout.split('[2/2 num_envs-8] point 2')[1].splitlines()[0]
    assert '[2/2 num_envs-8] PAAC: 8 environments' in first.stdout
    assert 'learning rate 0.0056' in first.stdout  # 0.0007 * 8 (section 5.2's rule)
    sweep_dir = tmp_path / 'sweep'
    for name in ('num_envs-4', 'num_envs-8'):
        rows = run_files.read_csv(sweep_dir / name / 'metrics.csv')
        assert int(rows[-1]['env_steps']) >= 200
    for figure in ('score_vs_frames.png', 'score_vs_hours.png', 'steps_per_sec.png'):
        assert (sweep_dir / figure).stat().st_size > 1000
    table = (sweep_dir / 'sweep.md').read_text()
    assert 'num_envs-4' in table and 'num_envs-8' in table
    assert '| run | score 10: steps, wall h, own h | score 1000: steps, wall h, own h |' in table
    assert table.count('not reached') == 2  # nobody scores 1000 in 200 steps
    again = _sweep(args, tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert '[1/2 num_envs-4] done' in again.stdout and '[2/2 num_envs-8] done' in again.stdout
    assert 'training to' not in again.stdout
    other = _sweep(_flags() + ['--grid=PAACConfig.num_envs = [4, 16]', '--steps=200',
                               '--sweep_dir=sweep'], tmp_path)
    assert other.returncode == 2 and 'holds runs of another command' in other.stderr


@pytest.mark.slow
def test_seeds_that_stop_at_their_score_are_done_and_skipped_on_a_rerun(tmp_path):
    """Seeds' time to a score: each point ends at its --stop_at_score, short of --steps, and
    counts as done; a rerun skips it (CartPole's random play passes 12: the stop is tested
    here, not learning)."""
    args = _flags(CARTPOLE + ['PAACConfig.num_envs = 4']) + [
        '--grid=PAACConfig.seed = [0, 1]', '--steps=100000', '--sweep_dir=sweep',
        '--stop_at_score=12', '--thresholds=12']
    first = _sweep(args, tmp_path)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    for name in ('seed-0', 'seed-1'):
        assert f'[{1 if name == "seed-0" else 2}/2 {name}] stopped at step' in first.stdout
        rows = run_files.read_csv(tmp_path / 'sweep' / name / 'metrics.csv')
        assert 0 < int(rows[-1]['env_steps']) < 100000
        assert float(rows[-1]['score_mean_100']) >= 12
    again = _sweep(args, tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert 'training to' not in again.stdout
    assert again.stdout.count('reached --stop_at_score=12); skipped') == 2
