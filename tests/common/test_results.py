"""common.results publishes a run's files and figures, and redraws the figure of all runs."""
import os

import pytest

from common import results
from common.run import app


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
