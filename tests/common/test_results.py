"""common.results publishes a run's files, figures and final policy, and redraws the figure of
all runs."""
import glob
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from common import evaluate
from common import results
from common import watch
from common.launch import app
from common.run import checkpoint as checkpoint_lib
from common.system import errors
from common.tools import plots
from common.tools import run_files


def _write_run(run_dir, paper, game=None, scores=(-20.5, -19.0)):
    os.makedirs(os.path.join(run_dir, 'checkpoints'))
    with open(os.path.join(run_dir, app.INVOCATION_FILE), 'w') as f:
        f.write(f'{{"paper": "{paper}"}}')
    if game:
        with open(os.path.join(run_dir, app.OPERATIVE_CONFIG_FILE), 'w') as f:
            f.write(f"AtariConfig.game = '{game}'\n")
    with open(os.path.join(run_dir, 'metrics.csv'), 'w') as f:
        f.write('wall_time,env_steps,frames,updates,episodes,score_mean_100,steps_per_sec\n'
                f'60,100,400,1,2,{scores[0]},50\n120,200,800,2,3,{scores[1]},60\n')
    with open(os.path.join(run_dir, 'checkpoints', 'ckpt-200.index'), 'w') as f:
        f.write('not copied')


@pytest.mark.slow
def test_publishing_copies_the_run_files_and_draws_each_and_all(tmp_path):
    results_dir = str(tmp_path / 'results')
    for paper in ('paac', 'dqn'):
        _write_run(str(tmp_path / f'run-{paper}'), paper, game='pong')
        results.publish(str(tmp_path / f'run-{paper}'), f'{paper}-pong', results_dir, True)
    published = tmp_path / 'results' / 'paac-pong'
    assert {'invocation.json', 'metrics.csv', 'score_vs_frames.png', 'score_vs_hours.png',
            'steps_per_sec.png'} <= set(os.listdir(published))
    assert not (published / 'checkpoints').exists()
    # The all-runs figures are per game, even with one game.
    assert sorted(name for name in os.listdir(results_dir) if name.endswith('.png')) == [
        'score_vs_frames-pong.png', 'score_vs_hours-pong.png', 'steps_per_sec-pong.png']
    for name in ('score_vs_frames-pong.png', 'score_vs_hours-pong.png', 'steps_per_sec-pong.png'):
        with open(tmp_path / 'results' / name, 'rb') as f:
            assert f.read(8) == b'\x89PNG\r\n\x1a\n'
    # The summary of every published run's time to score, a markdown table in results.md
    # beside the results folder, between markers that keep the prose around it.
    (tmp_path / 'results.md').write_text('# Runs\n\nprose kept\n')
    results.publish(str(tmp_path / 'run-paac'), 'paac-pong', results_dir, True, replace=True)
    summary = (tmp_path / 'results.md').read_text().splitlines()
    assert summary.count(results.TABLE_START) == 1  # rewritten in place, not appended twice
    table = [line for line in summary if line.startswith('| ')]
    assert [line.split(' | ')[0] for line in table] == ['| run', '| dqn-pong', '| paac-pong']
    assert 'score -15: steps, wall h, own h' in table[0]
    assert table[1].split(' | ')[1:4] == ['not reached'] * 3  # -20.5, -19.0: none reached
    assert summary[:3] == ['# Runs', '', 'prose kept']
    assert [line for line in summary if line.startswith('#')] == [
        '# Runs', '## Time to score', '### pong', '## Atari-5 scorecard']
    # Publishing under a name that holds a run is refused, naming it, and writes nothing;
    # --replace replaces the copy (no file of the old one left), not adds one.
    before = {path: os.path.getmtime(path) for path in glob.glob(f'{results_dir}/**', recursive=True)}
    with pytest.raises(errors.ConfigError, match=r'paac-pong already holds a published run \(paac '
                       r'on pong, [\d,]+ steps\); --replace replaces it'):
        results.publish(str(tmp_path / 'run-dqn'), 'paac-pong', results_dir, True)
    assert {path: os.path.getmtime(path)
            for path in glob.glob(f'{results_dir}/**', recursive=True)} == before
    (tmp_path / 'results' / 'paac-pong' / 'stale.txt').write_text('of the old publication')
    results.publish(str(tmp_path / 'run-dqn'), 'paac-pong', results_dir, True, replace=True)
    assert run_files.read_paper(str(tmp_path / 'results' / 'paac-pong')) == 'dqn'
    assert not (tmp_path / 'results' / 'paac-pong' / 'stale.txt').exists()
    assert sorted(os.listdir(results_dir)) == sorted(
        ['dqn-pong', 'paac-pong', 'score_vs_frames-pong.png', 'score_vs_hours-pong.png',
         'steps_per_sec-pong.png'])  # nothing left of the staging


@pytest.mark.slow
def test_publishing_runs_of_two_games_draws_and_tabulates_each_game_apart(tmp_path,
                                                                          monkeypatch):
    results_dir = tmp_path / 'results'
    results_dir.mkdir()
    for name in ('score_vs_frames.png', 'score_vs_hours.png', 'steps_per_sec.png'):
        (results_dir / name).write_bytes(b'all games, drawn before games were split')
    titles = []
    draw, draw_by_paper = plots.draw, plots.draw_by_paper
    monkeypatch.setattr(plots, 'draw', lambda runs, *args: titles.append(
        (args[-1], [run['label'] for run in runs])) or draw(runs, *args))
    monkeypatch.setattr(plots, 'draw_by_paper', lambda runs_by_paper, *args: titles.append(
        (args[-1], [(paper, [run['label'] for run in runs])
                    for paper, runs in runs_by_paper.items()]))
        or draw_by_paper(runs_by_paper, *args))
    runs = (('paac', 'breakout', (25.0, 120.0)), ('paac', 'pong', (-16.0, -14.0)),
            ('dqn', 'pong', (-21.0, -20.0)))
    for paper, game, scores in runs:
        _write_run(str(tmp_path / f'{paper}-{game}'), paper, game, scores)
        results.publish(str(tmp_path / f'{paper}-{game}'), f'{paper}-{game}', str(results_dir),
                        True)
    assert sorted(name for name in os.listdir(results_dir) if name.endswith('.png')) == sorted(
        f'{figure}-{game}.png' for figure in ('score_vs_frames', 'score_vs_hours', 'steps_per_sec')
        for game in ('pong', 'breakout'))  # and the unsuffixed all-games figures are gone
    assert {'score_vs_frames.png', 'score_vs_hours.png', 'steps_per_sec.png'} <= set(
        os.listdir(results_dir / 'paac-breakout'))  # a run's own figures keep the plain names
    # The last publication's figures: the run's own, then each game's, Pong first, each
    # titled with its game and holding its runs only, a panel per paper (PAAC's first), each
    # run named by its directory there.
    assert titles[-9:] == [('pong: dqn-pong', ['dqn: dqn-pong'])] * 3 + [
        ('pong: every published run', [('paac', ['paac-pong']), ('dqn', ['dqn-pong'])])] * 3 + [
        ('breakout: every published run', [('paac', ['paac-breakout'])])] * 3
    summary = (tmp_path / 'results.md').read_text().splitlines()
    assert [line for line in summary if line.startswith('#')] == [
        '# Published runs', '## Time to score', '### pong', '### breakout',
        '## Atari-5 scorecard']
    pong, breakout = ([line for line in section.split(results.TABLE_END)[0].splitlines()
                       if line.startswith('| ')]
                      for section in '\n'.join(summary).split('### ')[1:])
    assert [line.split(' | ')[0] for line in pong] == ['| run', '| dqn-pong', '| paac-pong']
    assert [cell.split(':')[0] for cell in pong[0].split(' | ')[1:4]] == [
        'score -15', 'score 0', 'score 18']
    assert pong[2].split(' | ')[1] == '200, 0.03, 0.03'  # -14 >= -15 at 200 steps, 120 s
    assert [line.split(' | ')[0] for line in breakout] == ['| run', '| paac-breakout']
    assert [cell.split(':')[0] for cell in breakout[0].split(' | ')[1:4]] == [
        'score 30', 'score 100', 'score 300']
    assert breakout[1].split(' | ')[1:4] == ['200, 0.03, 0.03'] * 2 + ['not reached']


def test_a_game_without_thresholds_is_timed_to_its_human_score_or_said_to_have_none(tmp_path):
    for game in ('seaquest', 'CartPole-v1'):
        _write_run(str(tmp_path / 'results' / game), 'paac', game)
    results.write_summary([str(tmp_path / 'results' / game)
                           for game in ('seaquest', 'CartPole-v1')], str(tmp_path / 'results'))
    block = (tmp_path / 'results.md').read_text().split('### ')[1:]
    assert [section.splitlines()[0] for section in block] == ['CartPole-v1', 'seaquest']
    assert 'No scores to time' in block[0] and '| ' not in block[0]
    assert '| run | score 20182: steps, wall h, own h | held/starved h' in block[1]


@pytest.mark.parametrize('name', ['../escape', '', '.hidden'])
def test_a_bad_name_is_refused(tmp_path, name):
    _write_run(str(tmp_path / 'run'), 'paac')
    with pytest.raises(errors.ConfigError, match='plain directory name'):
        results.publish(str(tmp_path / 'run'), name, str(tmp_path / 'results'))


def test_a_run_still_training_is_refused_until_its_holder_ends(tmp_path):
    import subprocess  # pylint: disable=import-outside-toplevel
    import sys  # pylint: disable=import-outside-toplevel
    _write_run(str(tmp_path / 'run'), 'paac', game='pong')
    holder = subprocess.Popen(
        [sys.executable, '-c', 'import sys, time; from common.run import run_lock; '
         'run_lock.acquire(sys.argv[1]); print("held", flush=True); time.sleep(60)',
         str(tmp_path / 'run')], stdout=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT))
    try:
        assert holder.stdout.readline().strip() == 'held'
        with pytest.raises(errors.ConfigError, match=rf'run is still training \(pid {holder.pid} '):
            results.publish(str(tmp_path / 'run'), 'x', str(tmp_path / 'results'), True)
        assert not (tmp_path / 'results').exists()
    finally:
        holder.kill()
        holder.wait()
    results.publish(str(tmp_path / 'run'), 'x', str(tmp_path / 'results'), True)
    assert (tmp_path / 'results' / 'x' / 'metrics.csv').is_file()


def test_a_run_without_metrics_is_refused(tmp_path):
    (tmp_path / 'run').mkdir()
    (tmp_path / 'run' / app.INVOCATION_FILE).write_text('{"paper": "paac"}')
    with pytest.raises(errors.ConfigError, match='no metrics.csv'):
        results.publish(str(tmp_path / 'run'), 'x', str(tmp_path / 'results'))


@pytest.mark.slow
def test_a_published_run_carries_its_policy_that_evaluate_and_watch_read(cartpole_run,
                                                                          tmp_path, monkeypatch):
    results_dir = str(tmp_path / 'results')
    written = results.publish(cartpole_run, 'cartpole', results_dir)
    published = tmp_path / 'results' / 'cartpole'
    weights = [str(published / 'policy_weights.data-00000-of-00001'),
               str(published / 'policy_weights.index')]
    assert set(weights) <= set(written)
    assert not (published / 'checkpoints').exists()
    # The network's weights and the counters, nothing of the optimizer.
    keys = tf.train.load_checkpoint(str(published / 'policy_weights')).get_variable_to_shape_map()
    assert {key.split('/')[0] for key in keys} == {
        'policy', 'counters', 'save_counter', '_CHECKPOINTABLE_OBJECT_GRAPH'}
    assert not any('optimizer' in key for key in keys)
    sizes = sum(os.path.getsize(path) for path in weights)
    assert sizes < 20_000  # 4 -> 16 -> (2 + 1) floats, and the object graph
    _, from_run, run_steps = evaluate.load_policy(cartpole_run)
    _, from_published, published_steps = evaluate.load_policy(str(published))
    assert run_steps == published_steps == 256
    for run_weight, published_weight in zip(from_run.network.weights,
                                            from_published.network.weights):
        np.testing.assert_array_equal(run_weight.numpy(), published_weight.numpy())
    # common.evaluate and common.watch take the published directory as they take the run, and
    # write beside the user (the current directory), not into the published record.
    published_files = {path.name: path.read_bytes() for path in published.iterdir()}
    (tmp_path / 'cwd').mkdir()
    monkeypatch.chdir(tmp_path / 'cwd')
    row, out = evaluate.evaluate_run(str(published), num_episodes=2, seed=7)
    assert out == str(tmp_path / 'cwd' / 'cartpole-eval.csv')
    assert row['env_steps'] == 256 and row['episodes'] == 2
    assert row['wall_time'] == checkpoint_lib.trained_seconds(cartpole_run)
    run_row, run_out = evaluate.evaluate_run(cartpole_run, num_episodes=2, seed=7)
    assert run_out == os.path.join(cartpole_run, 'eval.csv')
    assert row == {**run_row, 'seconds': row['seconds']}
    (read_row,) = run_files.read_csv(out)
    assert float(read_row['score_mean']) == row['score_mean']
    summary = watch.watch(str(published), max_steps=5)
    assert summary['path'] == str(tmp_path / 'cwd' / f'cartpole-{watch.DEFAULT_OUT}')
    assert summary['frames'] == 6 and os.path.isfile(summary['path'])
    with pytest.raises(errors.ConfigError, match=r"--out='x.txt'; allowed: a file name ending in"):
        evaluate.evaluate_run(str(published), out='x.txt')
    assert {path.name: path.read_bytes() for path in published.iterdir()} == published_files
    # A run without a readable checkpoint is refused, the published copy untouched; with
    # --without_policy it is published marked so, and carries no weights: not the earlier run's.
    _write_run(str(tmp_path / 'bare'), 'accel')
    with pytest.raises(errors.ConfigError, match=r'bare has no checkpoint to take a policy from '
                       r'\(no readable checkpoint.*--without_policy publishes'):
        results.publish(str(tmp_path / 'bare'), 'cartpole', results_dir)
    assert {path.name: path.read_bytes() for path in published.iterdir()} == published_files
    results.publish(str(tmp_path / 'bare'), 'cartpole', results_dir, without_policy=True,
                    replace=True)
    assert not any(name.startswith('policy_weights') for name in os.listdir(published))
    assert 'no readable checkpoint' in (published / results.NO_POLICY_FILE).read_text()
    with pytest.raises(checkpoint_lib.CheckpointError, match='no published policy_weights'):
        evaluate.load_policy(str(published))


def test_published_weights_restore_into_their_network_only(tmp_path):
    from common.learners import networks  # pylint: disable=import-outside-toplevel

    def network(width, seed):
        return networks.make_actor_critic(2, (4,), np.float32, network='mlp',
                                          torso_kwargs={'hidden_sizes': (width,)}, seed=seed)

    counters = checkpoint_lib.Counters()
    counters.env_steps.assign(1234)
    counters.elapsed_seconds.assign(56.5)
    source = tf.train.Checkpoint(counters=counters).write(str(tmp_path / 'ckpt-1234'))
    saved = network(16, seed=1)
    checkpoint_lib.write_policy_weights(str(tmp_path), saved, source)
    restored = network(16, seed=2)
    assert checkpoint_lib.restore_latest(str(tmp_path), model=restored) == 1234
    assert checkpoint_lib.trained_seconds(str(tmp_path)) == 56.5
    for saved_weight, restored_weight in zip(saved.weights, restored.weights):
        np.testing.assert_array_equal(saved_weight.numpy(), restored_weight.numpy())
    with pytest.raises(checkpoint_lib.CheckpointError, match='policy_weights does not fit'):
        checkpoint_lib.restore_latest(str(tmp_path), model=network(8, seed=3))


def test_a_published_run_names_the_preset_that_reproduces_it_or_is_said_to_name_none(tmp_path,
                                                                                     capsys):
    from paac_tf import main as paac_main  # pylint: disable=import-outside-toplevel
    import gin  # pylint: disable=import-outside-toplevel
    run_dir, results_dir = str(tmp_path / 'run'), str(tmp_path / 'results')
    _write_run(run_dir, 'paac')
    paac_main.configure([os.path.join(app.PROJECT_ROOT, 'gin/paac/pong.gin')], [])
    (tmp_path / 'run' / app.OPERATIVE_CONFIG_FILE).write_text(gin.operative_config_str())
    gin.clear_config()
    (tmp_path / 'run' / app.INVOCATION_FILE).write_text(
        '{"paper": "paac", "gin_files": ["gin/paac/pong.gin"], "gin_bindings": []}')
    results.publish(run_dir, 'paac-pong', results_dir, True)
    with open(os.path.join(results_dir, 'paac-pong', 'preset.json')) as f:
        assert json.load(f)['gin_files'] == ['gin/paac/pong.gin']
    # A --preset that configures something else is refused before anything is written.
    with pytest.raises(errors.ConfigError, match="--preset='gin/paac/original_code.gin' does "
                       'not reproduce .*PAACConfig.entropy_coef = 0.02 today, 0.01 in the run'):
        results.publish(run_dir, 'other', results_dir, True, preset='gin/paac/original_code.gin')
    assert not os.path.exists(os.path.join(results_dir, 'other'))
    # A command with more than the game and the seed bound names no preset: said, none recorded.
    (tmp_path / 'run' / app.INVOCATION_FILE).write_text(
        '{"paper": "paac", "gin_files": ["gin/paac/pong.gin"], '
        '"gin_bindings": ["PAACConfig.entropy_coef = 0.01"]}')
    capsys.readouterr()
    results.publish(run_dir, 'paac-pong', results_dir, True, replace=True)
    assert not os.path.exists(os.path.join(results_dir, 'paac-pong', 'preset.json'))
    assert ("warning: paac-pong names no repository preset that reproduces it "
            "('PAACConfig.entropy_coef = 0.01' binds more than the game or the seed)"
            in capsys.readouterr().err)
