"""common.results publishes a run's files, figures and final policy, and redraws the figure of
all runs."""
import os

import numpy as np
import pytest
import tensorflow as tf

from common import evaluate
from common import results
from common import watch
from common.tools import run_files
from common.run import app
from common.run import checkpoint as checkpoint_lib


def _write_run(run_dir, paper):
    os.makedirs(os.path.join(run_dir, 'checkpoints'))
    with open(os.path.join(run_dir, app.INVOCATION_FILE), 'w') as f:
        f.write(f'{{"paper": "{paper}"}}')
    with open(os.path.join(run_dir, 'metrics.csv'), 'w') as f:
        f.write('wall_time,env_steps,frames,updates,episodes,score_mean_100,steps_per_sec\n'
                '60,100,400,1,2,-20.5,50\n120,200,800,2,3,-19.0,60\n')
    with open(os.path.join(run_dir, 'checkpoints', 'ckpt-200.index'), 'w') as f:
        f.write('not copied')


def test_publishing_copies_the_run_files_and_draws_each_and_all(tmp_path):
    results_dir = str(tmp_path / 'results')
    for paper in ('paac', 'dqn'):
        _write_run(str(tmp_path / f'run-{paper}'), paper)
        results.publish(str(tmp_path / f'run-{paper}'), f'{paper}-pong', results_dir)
    published = tmp_path / 'results' / 'paac-pong'
    assert {'invocation.json', 'metrics.csv', 'score_vs_frames.png', 'score_vs_hours.png',
            'steps_per_sec.png'} <= set(os.listdir(published))
    assert not (published / 'checkpoints').exists()
    for name in ('score_vs_frames.png', 'score_vs_hours.png', 'steps_per_sec.png'):
        with open(tmp_path / 'results' / name, 'rb') as f:
            assert f.read(8) == b'\x89PNG\r\n\x1a\n'
    # The summary of every published run's time to score, a markdown table in results.md
    # beside the results folder, between markers that keep the prose around it.
    (tmp_path / 'results.md').write_text('# Runs\n\nprose kept\n')
    results.publish(str(tmp_path / 'run-paac'), 'paac-pong', results_dir)
    summary = (tmp_path / 'results.md').read_text().splitlines()
    assert summary.count(results.TABLE_START) == 1  # rewritten in place, not appended twice
    table = [line for line in summary if line.startswith('| ')]
    assert [line.split(' | ')[0] for line in table] == ['| run', '| dqn-pong', '| paac-pong']
    assert 'score -15: steps, wall h, own h' in table[0]
    assert table[1].split(' | ')[1:4] == ['not reached'] * 3  # -20.5, -19.0: none reached
    assert summary[:3] == ['# Runs', '', 'prose kept']
    # Republishing under the same name replaces the copy, not adds one.
    results.publish(str(tmp_path / 'run-paac'), 'paac-pong', results_dir)
    assert sorted(entry for entry in os.listdir(results_dir) if '.' not in entry) == [
        'dqn-pong', 'paac-pong']


@pytest.mark.parametrize('name', ['../escape', '', '.hidden'])
def test_a_bad_name_is_refused(tmp_path, name):
    _write_run(str(tmp_path / 'run'), 'paac')
    with pytest.raises(app.ConfigError, match='plain directory name'):
        results.publish(str(tmp_path / 'run'), name, str(tmp_path / 'results'))


def test_a_run_without_metrics_is_refused(tmp_path):
    (tmp_path / 'run').mkdir()
    (tmp_path / 'run' / app.INVOCATION_FILE).write_text('{"paper": "paac"}')
    with pytest.raises(app.ConfigError, match='no metrics.csv'):
        results.publish(str(tmp_path / 'run'), 'x', str(tmp_path / 'results'))


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
    with pytest.raises(app.ConfigError, match=r"--out='x.txt'; allowed: a file name ending in"):
        evaluate.evaluate_run(str(published), out='x.txt')
    assert {path.name: path.read_bytes() for path in published.iterdir()} == published_files
    # Republished from a run without checkpoints, it carries none: not the earlier run's.
    _write_run(str(tmp_path / 'bare'), 'accel')
    results.publish(str(tmp_path / 'bare'), 'cartpole', results_dir)
    assert not any(name.startswith('policy_weights') for name in os.listdir(published))
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
