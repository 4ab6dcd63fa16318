"""Every paper's entry point goes on from a carried run (python -m common.carry, then
--resume_from) in a new run directory as a resume in place does: the carried checkpoint is the
source's bit for bit, the counters and CSVs go on from its step, run.json and metrics.csv say
the session was carried, and (the synchronous papers) the next checkpoint equals the in-place
resume's, its replay refilled as the carry's is. A carry of another paper, or with a damaged
file, is refused in one line, exit 2, with nothing written."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from common.launch import app
from common.run import run_record
from common.tools import run_files

PAPERS = ('accel', 'dqn', 'ga3c', 'paac')  # tests/conftest.py TINY_CARTPOLE
# Whose next checkpoint equals bit for bit across two processes: GA3C's agents, predictors and
# trainers are threads whose interleaving decides the updates.
SEED_EXACT = {'paac', 'dqn', 'accel'}
STEPS = 600
COUNTERS = 'counters/elapsed_seconds/.ATTRIBUTES/VARIABLE_VALUE'


def _command(cartpole_command, paper, run_dir, stop, extra=()):
    # fast DQN's synchronized mode: no trainer thread, so its updates are seed-exact.
    bindings = ['{config}.concurrent = False'] if paper == 'dqn' else []
    return cartpole_command(paper, bindings,
                            [f'--run_dir={run_dir}', f'--stop_at_steps={stop}'] + list(extra))


def _run(command, cwd):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT))
    return result


def _tensors(prefix):
    reader = tf.train.load_checkpoint(prefix)
    return {key: reader.get_tensor(key) for key in reader.get_variable_to_shape_map()}


def _newest(run_dir):
    with open(os.path.join(run_dir, 'checkpoints', 'checkpoint')) as f:
        name = f.readline().split('"')[1]
    return os.path.join(run_dir, 'checkpoints', name)


def _assert_equal(first, second, skip=()):
    assert sorted(first) == sorted(second)
    for key in first:
        if key not in skip:
            assert np.array_equal(first[key], second[key]), key


@pytest.mark.slow
@pytest.mark.parametrize('paper', PAPERS)
def test_a_carried_run_goes_on_as_a_resume_in_place(paper, tmp_path, cartpole_command):
    started = _run(_command(cartpole_command, paper, 'source', STEPS), tmp_path)
    assert started.returncode == 0, started.stderr[-3000:]
    shutil.copytree(tmp_path / 'source', tmp_path / 'in_place')
    carried = _run([sys.executable, '-m', 'common.carry', 'source', 'carried'], tmp_path)
    assert carried.returncode == 0, carried.stderr[-3000:]
    source = _newest(tmp_path / 'source')
    step = int(source.rsplit('-', 1)[1])

    resume = ['--resume_from=carried']
    moved = _run(_command(cartpole_command, paper, 'moved', 2 * STEPS, resume), tmp_path)
    assert moved.returncode == 0, moved.stderr[-3000:]
    assert f'resuming from moved/checkpoints/ckpt-{step} at step {step:,}' in moved.stdout
    if paper in ('dqn', 'accel') and 'replay memory is refilled' in moved.stdout:
        assert 'a carried run carries no replay' in moved.stdout
    _assert_equal(_tensors(source), _tensors(tmp_path / 'moved' / 'checkpoints' / f'ckpt-{step}'))
    record = run_record.last_session(tmp_path / 'moved')[run_record.CARRIED_FROM]
    assert record['env_steps'] == step and record['machine']['cpu_model']
    assert record['from_run_dir'] == str(tmp_path / 'source')
    rows = run_files.read_csv(tmp_path / 'moved' / 'metrics.csv')
    starts = [(int(row['env_steps']), row['session_start']) for row in rows
              if row['session_start']]
    assert starts[0][1] == 'new' and starts[-1][1] == 'carried' and starts[-1][0] >= step, starts
    steps = [int(row['env_steps']) for row in rows]
    assert steps == sorted(steps) and steps[-1] >= 2 * STEPS

    if paper in SEED_EXACT:
        # The in-place resume without the replay its session saved: a carry carries none.
        shutil.rmtree(tmp_path / 'in_place' / 'replay', ignore_errors=True)
        in_place = _run(_command(cartpole_command, paper, 'in_place', 2 * STEPS), tmp_path)
        assert in_place.returncode == 0, in_place.stderr[-3000:]
        _assert_equal(_tensors(_newest(tmp_path / 'in_place')),
                      _tensors(_newest(tmp_path / 'moved')), skip=(COUNTERS,))

    other = 'paac' if paper != 'paac' else 'accel'
    refused = _run(_command(cartpole_command, other, 'wrong', 2 * STEPS, resume), tmp_path)
    assert refused.returncode == 2 and 'carries another run' in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not (tmp_path / 'wrong').exists()
    with open(tmp_path / 'carried' / 'episodes.csv', 'a') as f:
        f.write('1,2,3,4\n')
    damaged = _run(_command(cartpole_command, paper, 'damaged', 2 * STEPS, resume), tmp_path)
    assert damaged.returncode == 2, damaged.stderr
    assert 'episodes.csv is damaged' in damaged.stderr.strip().splitlines()[-1]
    assert not (tmp_path / 'damaged').exists()
