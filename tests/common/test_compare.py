"""common.compare summarizes any run directories from the common run format alone."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from common import compare
from common.launch import app
from common.system import errors
from common.tools import run_files


def _write_run(run_dir, paper, metric_rows, eval_rows=()):
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, app.INVOCATION_FILE), 'w') as f:
        json.dump({'paper': paper}, f)
    with open(os.path.join(run_dir, 'metrics.csv'), 'w') as f:
        f.write('wall_time,env_steps,frames,updates,episodes,score_mean_100,steps_per_sec\n')
        for row in metric_rows:
            f.write(','.join(str(value) for value in row) + '\n')
    if eval_rows:
        with open(os.path.join(run_dir, 'eval.csv'), 'w') as f:
            f.write('wall_time,env_steps,episodes,score_mean\n')
            for row in eval_rows:
                f.write(','.join(str(value) for value in row) + '\n')


def test_summary_takes_last_best_and_mean_rate(tmp_path):
    run_dir = str(tmp_path / 'paac-pong-1')
    _write_run(run_dir, 'paac', [(3600, 1000, 4000, 10, 2, '', 100),
                                 (7200, 2000, 8000, 20, 5, -20.0, 300),
                                 (10800, 3000, 12000, 30, 9, -21.0, 200)],
               eval_rows=[(1, 2000, 30, -18.0), (1, 3000, 30, -19.5)])
    row = compare.summarize(run_dir)
    assert row['paper'] == 'paac' and row['env_steps'] == 3000 and row['frames'] == 12000
    assert row['hours'] == 3.0 and row['episodes'] == 9
    assert row['score_mean_100'] == -21.0 and row['best_score_mean_100'] == -20.0
    assert row['steps_per_sec'] == 200.0
    assert row['eval_score_mean'] == -19.5 and row['eval_env_steps'] == 3000  # the last
    assert row['best_eval_score_mean'] == -18.0 and row['best_eval_env_steps'] == 2000


def test_rows_superseded_by_a_resume_from_an_older_checkpoint_are_left_out(tmp_path):
    """Killed at 3000 steps with its last checkpoint at 1000: the resumed run logs 1500 and 3500
    after the lost 2000 and 3000, and only its own rows make the curve and the table."""
    from common.tools import plots
    run_dir = str(tmp_path / 'ppo-pong-1')
    _write_run(run_dir, 'accel', [(3600, 1000, 4000, 10, 2, -21.0, 100),
                                  (7200, 2000, 8000, 20, 5, -15.0, 300),
                                  (10800, 3000, 12000, 30, 9, -16.0, 300),
                                  (5400, 1500, 6000, 15, 4, -20.0, 200),
                                  (9000, 3500, 14000, 35, 10, -19.0, 200)])
    assert plots.load_run(run_dir, 'ppo')['metrics']['env_steps'] == [1000, 1500, 3500]
    row = compare.summarize(run_dir)
    assert row['env_steps'] == 3500 and row['best_score_mean_100'] == -19.0
    assert row['steps_per_sec'] == 500 / 3


def test_cli_prints_one_line_per_run_and_writes_csv(tmp_path):
    for name, paper in (('paac-pong-1', 'paac'), ('dqn-pong-1', 'dqn')):
        _write_run(str(tmp_path / name), paper, [(60, 100, 400, 1, 0, '', 50)])
    out_csv = tmp_path / 'table.csv'
    result = subprocess.run(
        [sys.executable, '-m', 'common.compare', str(tmp_path / 'paac-pong-1'),
         str(tmp_path / 'dqn-pong-1'), f'--csv={out_csv}'],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT),
        timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 3 and 'paac-pong-1' in lines[1] and 'dqn' in lines[2]
    assert len(out_csv.read_text().strip().splitlines()) == 3


def test_a_directory_that_is_not_a_run_is_named(tmp_path):
    with pytest.raises(errors.ConfigError, match='not a run directory'):
        compare.summarize(str(tmp_path))
    assert math.isnan(run_files.number('x'))


def _write_operative_config(run_dir, game):
    with open(os.path.join(run_dir, app.OPERATIVE_CONFIG_FILE), 'w') as f:
        f.write(f"AtariConfig.game = '{game}'\n")


def test_plot_draws_one_line_per_run_and_the_evaluation_points(tmp_path):
    from common.tools import plots
    _write_run(str(tmp_path / 'dqn-pong-1'), 'dqn',
               [(3600, 1000, 4000, 10, 2, -21.0, 100), (7200, 2000, 8000, 20, 5, -20.0, 300)],
               eval_rows=[(1, 1500, 30, -19.5), (2, 2000, 30, -18.0)])
    _write_run(str(tmp_path / 'paac-pong-1'), 'paac',
               [(1800, 1000, 4000, 10, 2, '', 100), (3600, 3000, 12000, 20, 5, -19.0, 300)])
    runs = [plots.load_run(str(tmp_path / name), run_files.run_label(str(tmp_path / name)))
            for name in ('dqn-pong-1', 'paac-pong-1')]
    assert runs[0]['eval']['frames'] == [6000.0, 8000.0]  # env_steps x 4 frames per step
    assert runs[0]['eval']['hours'] == [2.0, 2.0]  # the first metrics row at or after it
    figure = plots.draw(runs, 'frames', 'score_mean_100', 'frames', 'score')
    lines = figure.axes[0].lines
    # A line per run plus the DQN run's evaluation markers; the PAAC run's empty score is
    # dropped, not drawn as zero.
    assert [line.get_label() for line in lines] == [
        'dqn: dqn-pong-1', 'dqn: dqn-pong-1 (evaluation)', 'paac: paac-pong-1']
    np.testing.assert_allclose(lines[0].get_xdata(), [0.004, 0.008])
    np.testing.assert_allclose(lines[2].get_ydata(), [-19.0])
    assert figure.get_size_inches()[0] * figure.dpi == 800 + 320  # the legend beside
    rates = plots.draw(runs, 'hours', 'steps_per_sec', 'hours', 'steps/s')
    assert len(rates.axes[0].lines) == 2  # no evaluation markers on the throughput figure


def test_the_memory_figure_draws_the_runs_that_recorded_it(tmp_path):
    """rss_mb against env steps, a line per run that has the column; no figure without one."""
    from common.tools import plots
    _write_run(str(tmp_path / 'old'), 'paac', [(60, 100, 400, 1, 0, -20.5, 50)])
    run_dir = str(tmp_path / 'new')
    _write_run(run_dir, 'paac', [])
    with open(os.path.join(run_dir, 'metrics.csv'), 'w') as f:
        f.write('wall_time,env_steps,frames,updates,episodes,score_mean_100,steps_per_sec,rss_mb\n'
                '60,1000000,4000000,1,0,-20.5,50,1500.5\n120,2000000,8000000,2,1,-20.0,60,1510\n')
    runs = [plots.load_run(str(tmp_path / name), name) for name in ('old', 'new')]
    assert plots.plot_memory(runs[:1], str(tmp_path / 'plots')) is None
    path = plots.plot_memory(runs, str(tmp_path / 'plots'), suffix='-pong')
    assert path == str(tmp_path / 'plots' / 'rss_mb-pong.png') and os.path.isfile(path)
    figure = plots.draw(runs[1:], *plots.MEMORY_FIGURE[1:])
    (line,) = figure.axes[0].lines
    np.testing.assert_allclose(line.get_xdata(), [1.0, 2.0])  # millions of steps
    np.testing.assert_allclose(line.get_ydata(), [1500.5, 1510.0])


def test_cli_plot_writes_three_pngs_and_names_a_bad_directory_among_good_ones(tmp_path, errors_in):
    for name, paper in (('paac-pong-1', 'paac'), ('dqn-pong-1', 'dqn')):
        _write_run(str(tmp_path / name), paper, [(60, 100, 400, 1, 0, -20.5, 50),
                                                 (120, 200, 800, 2, 1, -20.0, 60)])
        _write_operative_config(str(tmp_path / name), 'pong')
    broken = tmp_path / 'broken'
    broken.mkdir()
    (broken / app.INVOCATION_FILE).write_text('{"paper": ')
    result = subprocess.run(
        [sys.executable, '-m', 'common.compare', str(tmp_path / 'paac-pong-1'), str(broken),
         str(tmp_path / 'dqn-pong-1'), f'--plot={tmp_path / "plots"}'],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT),
        timeout=120)
    assert result.returncode == 2
    error_lines = errors_in(result.stderr)
    assert len(error_lines) == 1 and 'broken' in error_lines[0] and 'JSON' in error_lines[0]
    table = result.stdout.splitlines()
    assert 'game' in table[0] and 'pong' in table[1] and 'dqn-pong-1' in table[2]
    for name in ('score_vs_frames.png', 'score_vs_hours.png', 'steps_per_sec.png'):
        with open(tmp_path / 'plots' / name, 'rb') as f:
            assert f.read(8) == b'\x89PNG\r\n\x1a\n'
    # One game: no 'game:' headings and the figures keep their plain names.
    assert not any(line.startswith('game:') for line in table)
    assert len(os.listdir(tmp_path / 'plots')) == 3


def test_runs_are_grouped_by_game_pong_first_then_alphabetical(tmp_path):
    from common.tools import plots
    for name, game in (('a', 'seaquest'), ('b', 'pong'), ('c', 'breakout'), ('d', 'pong')):
        _write_run(str(tmp_path / name), 'paac', [])
        _write_operative_config(str(tmp_path / name), game)
    _write_run(str(tmp_path / 'e'), 'paac', [])  # no operative_config.gin: game '?'
    groups = compare.group_by_game([str(tmp_path / name) for name in 'abcde'])
    assert {game: [os.path.basename(path) for path in paths]
            for game, paths in groups.items()} == {
        'pong': ['b', 'd'], '?': ['e'], 'breakout': ['c'], 'seaquest': ['a']}
    assert list(groups) == ['pong', '?', 'breakout', 'seaquest']
    assert [plots.file_suffix(game) for game in ('breakout', 'ALE/Breakout-v5', '?')] == [
        '-breakout', '-ALE_Breakout-v5', '-unknown']


def test_cli_prints_and_draws_each_game_apart(tmp_path):
    """Two Pong runs and a Breakout run (named first): a summary and a time-to-score table per
    game, Pong first, each with its game's runs only; figures per game, suffixed; one CSV."""
    names = ('paac-breakout-1', 'paac-pong-1', 'dqn-pong-1')
    for name, game, score in zip(names, ('breakout', 'pong', 'pong'), (35.0, -14.0, -16.0)):
        _write_run(str(tmp_path / name), name.split('-')[0],
                   [(1800, 1000, 4000, 10, 5, score - 1, 100),
                    (3600, 2000, 8000, 20, 9, score, 100)])
        _write_operative_config(str(tmp_path / name), game)
    result = subprocess.run(
        [sys.executable, '-m', 'common.compare'] + [str(tmp_path / name) for name in names] + [
            '--thresholds=-15,30', f'--plot={tmp_path / "plots"}', f'--csv={tmp_path / "t.csv"}'],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT),
        timeout=120)
    assert result.returncode == 0, result.stderr
    printed = [line for line in result.stdout.splitlines() if not line.startswith('wrote ')]
    sections = [section.splitlines() for section in '\n'.join(printed).split('\n\n')]
    assert len(sections) == 4
    assert [section[0] for section in sections[0::2]] == ['game: pong', 'game: breakout']
    assert [section[1].split()[:2] for section in sections[0::2]] == [['run', 'paper']] * 2
    assert [section[0].split()[:3] for section in sections[1::2]] == [['run', 'score', '-15:']] * 2
    # Each game's tables hold its runs only, in the order given.
    runs = [[line.split()[0] for line in section[1:] if not line.startswith(('game:', 'run '))]
            for section in sections]
    assert runs == [['paac-pong-1', 'dqn-pong-1']] * 2 + [['paac-breakout-1']] * 2
    assert sections[3][1].split()[1:4] == ['1000,', '0.50,', '0.50']  # Breakout 34 >= -15
    assert sorted(os.listdir(tmp_path / 'plots')) == sorted(
        f'{figure}-{game}.png' for figure in ('score_vs_frames', 'score_vs_hours', 'steps_per_sec')
        for game in ('pong', 'breakout'))
    csv_rows = run_files.read_csv(str(tmp_path / 't.csv'))
    assert [row['game'] for row in csv_rows] == ['breakout', 'pong', 'pong']


def test_cli_thresholds_print_steps_and_hours_to_each_score(tmp_path):
    _write_run(str(tmp_path / 'paac-pong-1'), 'paac',
               [(1800, 1000, 4000, 10, 5, -18.0, 100), (3600, 2000, 8000, 20, 9, -14.0, 100),
                (5400, 3000, 12000, 30, 12, 0.5, 100)])
    zen1 = {'cpu_model': 'AMD EPYC 7551', 'cpu_family': '23', 'cpu_model_number': '1',
            'cpu_flags': ['avx2'], 'usable_cores': 2}
    zen5 = dict(zen1, cpu_family='26', cpu_model_number='2', cpu_flags=['avx2', 'avx512f'])
    with open(tmp_path / 'paac-pong-1' / app.RUN_FILE, 'w') as f:  # two sessions, a carry
        json.dump({'sessions': [{'machine': zen1}, {'machine': zen5}, {'machine': zen5}]}, f)
    command = [sys.executable, '-m', 'common.compare', str(tmp_path / 'paac-pong-1'),
               '--thresholds=-15,0,18']
    env = dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    table = result.stdout.strip().split('\n\n')[1].splitlines()
    assert table[0].startswith('run') and 'score -15' in table[0] and 'score 18' in table[0]
    # -15 first reached at 2,000 steps, 1 h; 0 at 3,000 steps, 1.5 h; 18 never. No load
    # columns: the own clock equals the wall clock and all 1.5 h are unrecorded.
    assert table[1].split()[:11] == ['paac-pong-1', '2000,', '1.00,', '1.00', '3000,', '1.50,',
                                     '1.50', 'not', 'reached', '0.00', '1.50']
    # No steal_pct column: the host's share is unknown. The machines it ran on, each once: the
    # same code runs 2-4x apart on these.
    assert 'host steal % (median, max)' in table[0]
    assert table[1].split(' 1.50 ')[-1].strip().split(None, 1)[0] == '?'
    assert table[1].split(' 1.50 ')[-1].strip().split(None, 1)[1] == (
        'AMD EPYC 7551 (family 23 model 1; avx2), 2 cores; '
        'AMD EPYC 7551 (family 26 model 2; avx2, avx512f), 2 cores')
    bad = subprocess.run(command[:-1] + ['--thresholds=-15,high'], capture_output=True,
                         text=True, env=env, timeout=60)
    assert bad.returncode == 2 and "--thresholds='high' is not a score" in bad.stderr


def test_held_time_is_left_off_the_own_clock_the_table_and_the_figures_use(tmp_path):
    """A run held for 15 minutes between two 10-second rows: the table shows both clocks, the
    curves use the own clock."""
    from common.tools import plots
    run_dir = tmp_path / 'held'
    _write_run(str(run_dir), 'paac', [])
    (run_dir / 'metrics.csv').write_text(
        'wall_time,env_steps,frames,updates,episodes,score_mean_100,steps_per_sec,'
        'load_1m,run_cpu_cores,steal_pct\n'
        '10,100,400,1,1,-21,10,1.9,2.0,0.5\n20,200,800,2,2,-20,10,2.0,2.0,1.5\n'
        '930,300,1200,3,3,-19,0.1,0.2,0.022,0.0\n940,400,1600,4,4,-18,10,2.0,2.0,12.0\n')
    row = compare.summarize(str(run_dir))
    table = compare.time_to_score_rows([str(run_dir)], [-20])
    assert table[1][1:5] == ['200, 0.01, 0.01', '0.25', '0.00', '1.0, 12.0']
    assert row['hours'] == pytest.approx(940 / 3600)
    assert row['own_hours'] == pytest.approx((10 + 10 + 910 * 0.011 + 10) / 3600, rel=1e-3)
    run = plots.load_run(str(run_dir), 'held')
    assert run['metrics']['hours'][-1] == pytest.approx(row['own_hours'])


def _write_seeded_run(run_dir, score, seed, game='pong', dtype='bfloat16', paper='accel'):
    """A run whose operative_config.gin binds its seed, compute dtype and game, and whose last
    score_mean_100 is score."""
    _write_run(run_dir, paper, [(60, 100, 400, 1, 0, score - 5, 50),
                                (120, 200, 800, 2, 1, score, 60)])
    with open(os.path.join(run_dir, app.OPERATIVE_CONFIG_FILE), 'w') as f:
        f.write(f"# Parameters for AccelConfig:\nAccelConfig.compute_dtype = '{dtype}'\n"
                f"AccelConfig.seed = {seed}\n\n# Parameters for AtariConfig:\n"
                f"AtariConfig.game = '{game}'\n")


def test_cli_aggregates_the_runs_that_differ_only_in_seed(tmp_path):
    """Seeds 0, 1, 2 scoring 18, 20, 13 and a float32 run: one group of three, mean 17; each
    of the 27 resamples of three seeds is equally likely, and P(all 13) = P(all 20) = 1/27 >
    2.5%, so the 95% interval is (13, 20). The float32 run is in the first table only."""
    names = ('ppo-pong', 'ppo-pong-seed-1', 'ppo-pong-seed-2', 'ppo-pong-float32')
    for name, score, seed, dtype in zip(names, (18.0, 20.0, 13.0, 5.0), (0, 1, 2, 0),
                                        ('bfloat16',) * 3 + ('float32',)):
        _write_seeded_run(str(tmp_path / name), score, seed, dtype=dtype)
    result = subprocess.run(
        [sys.executable, '-m', 'common.compare'] + [str(tmp_path / name) for name in names],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT),
        timeout=60)
    assert result.returncode == 0, result.stderr
    first, seeds = result.stdout.strip().split('\n\n')
    assert len(first.splitlines()) == 5
    lines = seeds.splitlines()
    assert lines[0].startswith('runs that differ only in seed')
    assert lines[1].split() == ['first', 'run', 'runs', 'game', 'seeds', 'score_mean_100',
                                'ci95_low', 'ci95_high']
    assert lines[2].split() == ['ppo-pong', '3', 'pong', '0,', '1,', '2', '17.00', '13.00',
                                '20.00']
    assert len(lines) == 3 and 'float32' not in seeds


def test_seed_groups_on_two_games_get_the_iqm_of_human_normalized_scores(tmp_path):
    """One configuration on Pong (random -20.7, human 9.3) at 50% and 100%, Breakout (1.7,
    31.8) at 0% and 100%, CartPole (no human score) twice; and another paper's Pong runs. The
    IQM of 50, 100, 0, 100 is the mean of the middle two, 75; its 16 stratified resamples have
    IQMs 25 (3 ways), 50 (3), 75 (5) and 100 (5): the interval is (25, 100). Breakout's mean
    of 1.7 and 31.8 is 16.75; its resamples are all 1.7 or all 31.8 with P 1/4 each: (1.7, 31.8).
    """
    runs = [('pong-0', -5.7, 0, 'pong', 'accel'), ('pong-1', 9.3, 1, 'pong', 'accel'),
            ('breakout-0', 1.7, 0, 'breakout', 'accel'),
            ('breakout-1', 31.8, 1, 'breakout', 'accel'),
            ('cartpole-0', 200.0, 0, 'CartPole-v1', 'accel'),
            ('cartpole-1', 500.0, 1, 'CartPole-v1', 'accel'),
            ('paac-pong-0', -20.0, 0, 'pong', 'paac'), ('paac-pong-1', -10.0, 1, 'pong', 'paac')]
    for name, score, seed, game, paper in runs:
        _write_seeded_run(str(tmp_path / name), score, seed, game=game, paper=paper)
    run_dirs = [str(tmp_path / run[0]) for run in runs]
    table = compare.seed_rows([(compare.summarize(run_dir), run_dir) for run_dir in run_dirs])
    assert [row[:4] for row in table[1:5]] == [
        ('pong-0', '2', 'pong', '0, 1'), ('breakout-0', '2', 'breakout', '0, 1'),
        ('cartpole-0', '2', 'CartPole-v1', '0, 1'), ('paac-pong-0', '2', 'pong', '0, 1')]
    assert table[2][4:] == ('16.75', '1.70', '31.80')
    assert table[4][4:] == ('-15.00', '-20.00', '-10.00')
    assert table[5] == ('IQM human-normalized % (pong-0)', '6',
                        'pong, breakout; left out (no human score): CartPole-v1', '-',
                        '75.00', '25.00', '100.00')
    assert len(table) == 6  # the paac runs are on one game: no IQM row of their own
