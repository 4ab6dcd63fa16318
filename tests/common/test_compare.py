"""common.compare summarizes any run directories from the common run format alone."""
import json
import math
import os
import subprocess
import sys

import pytest

from common import app
from common import compare


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
               eval_rows=[(1, 3000, 30, -19.5)])
    row = compare.summarize(run_dir)
    assert row['paper'] == 'paac' and row['env_steps'] == 3000 and row['frames'] == 12000
    assert row['hours'] == 3.0 and row['episodes'] == 9
    assert row['score_mean_100'] == -21.0 and row['best_score_mean_100'] == -20.0
    assert row['steps_per_sec'] == 200.0
    assert row['eval_score_mean'] == -19.5 and row['eval_env_steps'] == 3000


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
    with pytest.raises(app.ConfigError, match='not a run directory'):
        compare.summarize(str(tmp_path))
    assert math.isnan(compare._number('x'))
