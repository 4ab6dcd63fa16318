"""`python -m common.suite`: a preset over several games end to end (tiny budgets), its table's
arithmetic against a hand computation, skip and resume on a rerun, and one-line refusals."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from common.launch import app
from common.tools import reference_scores
from common.tools import run_files

PRESET = os.path.join(app.PROJECT_ROOT, 'gin', 'paac', 'paper.gin')
# PAAC's paper preset made tiny: 4 environments in one process, 20 steps per update.
TINY = ['PAACConfig.num_envs = 4', 'PAACConfig.num_workers = 1', "make_pool.kind = 'serial'",
        'PAACConfig.total_steps = 100000', 'PAACConfig.log_every_seconds = 0.01']
EVAL = ['--eval_episodes=2', '--eval_max_frames=160']  # 40 agent steps of 4 frames


def _env():
    return dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)


def _suite(args, cwd, timeout=400):
    return subprocess.run([sys.executable, '-m', 'common.suite'] + args, cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=timeout)


def _preset_flags(bindings=TINY, gin_file=PRESET):
    return [f'--gin_file={gin_file}'] + [f'--gin_bindings={binding}' for binding in bindings]


def _one_line_refusal(result, *named):
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('error: '), result.stderr[-2000:]
    for text in named:
        assert text in lines[0]
    return lines[0]


@pytest.mark.parametrize('args, named', [
    (['--games=breakout,breakuot', '--steps=40'], ('breakuot', 'breakout')),
    (['--games=pong', '--steps=0'], ('--steps=0',)),
    (['--games=pong,pong', '--steps=40'], ('pong',)),
    (['--games=tetris', '--steps=40'], ('tetris',)),  # an ale_py ROM without human scores
])
def test_bad_games_and_budgets_are_refused_in_one_line_before_anything_starts(tmp_path, args,
                                                                               named):
    result = _suite(_preset_flags() + args + ['--suite_dir=suite'], tmp_path)
    _one_line_refusal(result, *named)
    assert not os.path.exists(tmp_path / 'suite')


def test_a_game_of_the_57_outside_mnih_2015s_49_is_accepted(tmp_path):
    # Phoenix has random and human scores only in the 57-game table (common/tools/atari5.py):
    # the check passes it and refuses the next game.
    result = _suite(_preset_flags() + ['--games=phoenix,tetris', '--steps=40',
                                       '--suite_dir=suite'], tmp_path)
    line = _one_line_refusal(result, "'tetris'", 'Badia et al. (2020)')
    assert 'phoenix' not in line
    assert not os.path.exists(tmp_path / 'suite')


@pytest.mark.slow
def test_a_preset_of_another_paper_is_refused_in_one_line(tmp_path):
    result = _suite(_preset_flags() + ['--paper=dqn', '--games=pong', '--steps=40',
                                       '--suite_dir=suite'], tmp_path)
    _one_line_refusal(result, "--paper='dqn'", 'configures paac', 'PAACConfig')
    assert not os.path.exists(tmp_path / 'suite')


@pytest.mark.slow
def test_three_games_skip_finished_resume_unfinished_and_table_arithmetic(tmp_path):
    flags = _preset_flags() + ['--steps=40', '--suite_dir=suite'] + EVAL
    first = _suite(flags + ['--games=pong,breakout'], tmp_path)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert '[1/2 pong] game 1 of 2: training to 40 steps' in first.stdout
    assert '[2/2 breakout]' in first.stdout and '[2/2 breakout] steps' in first.stdout
    # Seaquest begun outside the suite and stopped at 20 steps: the suite resumes it.
    partial = subprocess.run(
        [sys.executable, '-m', 'paac_tf.main'] + _preset_flags(
            TINY + ["AtariConfig.game = 'seaquest'"]) + ['--stop_at_steps=20',
                                                         '--run_dir=suite/seaquest'],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=240)
    assert partial.returncode == 0, partial.stderr[-3000:]
    second = _suite(flags + ['--games=pong,breakout,seaquest'], tmp_path)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert '[1/3 pong] done: 40 steps' in second.stdout
    assert '[2/3 breakout] done: 40 steps' in second.stdout
    assert 'training to 40 steps' not in second.stdout.split('[3/3 seaquest]')[0]
    assert '[3/3 seaquest] game 3 of 3: training to 40 steps in suite/seaquest (resuming at ' \
           '20)' in second.stdout
    suite_dir = tmp_path / 'suite'
    record = json.loads((suite_dir / 'suite.json').read_text())
    assert record['paper'] == 'paac' and sorted(record['games']) == ['breakout', 'pong',
                                                                        'seaquest']
    rows = {row['game']: row for row in run_files.read_csv(suite_dir / 'suite.csv')}
    normalized = []
    for game in ('pong', 'breakout', 'seaquest'):
        evaluation = run_files.read_csv(suite_dir / game / 'eval.csv')[-1]
        assert int(evaluation['episodes']) == 2 and int(evaluation['env_steps']) == 40
        random, human = reference_scores.random_and_human(game)
        by_hand = 100 * (float(evaluation['score_mean']) - random) / (human - random)
        assert float(rows[game]['normalized']) == pytest.approx(by_hand)
        assert float(rows[game]['eval_score_mean']) == float(evaluation['score_mean'])
        assert int(rows[game]['env_steps']) == 40
        normalized.append(by_hand)
    assert float(rows['median']['normalized']) == pytest.approx(sorted(normalized)[1])
    assert float(rows['mean']['normalized']) == pytest.approx(sum(normalized) / 3)
    table = (suite_dir / 'suite.md').read_text()
    assert '| breakout | 40 |' in table and '470.1 (archnips)' in table  # PAAC's Table 1
    assert 'over the 3 evaluated game(s)' in table


@pytest.mark.slow
def test_ctrl_c_ends_the_game_saved_and_the_suite_with_130(tmp_path, process_tree):
    process = subprocess.Popen(
        [sys.executable, '-m', 'common.suite'] + _preset_flags() + [
            '--games=pong', '--steps=90000', '--suite_dir=suite'] + EVAL,
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    children = set()
    for line in process.stdout:  # the child's first progress line: it is training
        children.update(process_tree.descendants(process.pid))
        if '[1/1 pong] steps' in line:
            break
    children.update(process_tree.descendants(process.pid))
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err[-3000:]
    assert 'interrupted in game 1 of 1 (pong' in err and 'rerun the same command' in err
    assert os.listdir(tmp_path / 'suite' / 'pong' / 'checkpoints')
    assert children and process_tree.wait_for(lambda: not process_tree.alive(children), 15)
    del out


@pytest.mark.parametrize('record, named', [
    (None, ('is not a carried run', 'python -m common.carry')),
    ({'paper': 'paac', 'env': 'qbert'}, ("carries 'qbert', not a game of --games (pong)",)),
    ({'paper': 'dqn', 'env': 'pong'}, ("carries a dqn run; this suite's preset configures paac",)),
])
def test_a_carry_of_another_game_or_paper_is_refused_before_anything_starts(tmp_path, record,
                                                                              named):
    folder = tmp_path / 'carried'
    folder.mkdir()
    if record is not None:  # the suite reads carry.json's presence and run.json's identity
        (folder / 'carry.json').write_text('{}')
        (folder / app.RUN_FILE).write_text(json.dumps(dict(record, sessions=[])))
    result = _suite(_preset_flags() + ['--games=pong', '--steps=40', '--suite_dir=suite',
                                       f'--resume_from={folder}'], tmp_path)
    _one_line_refusal(result, *named)
    assert not os.path.exists(tmp_path / 'suite')


@pytest.mark.slow
def test_a_game_carried_from_another_machine_goes_on_in_the_suite(tmp_path):
    first = subprocess.run(
        [sys.executable, '-m', 'paac_tf.main'] + _preset_flags(
            TINY + ["AtariConfig.game = 'pong'"]) + ['--stop_at_steps=20', '--run_dir=elsewhere'],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=240)
    assert first.returncode == 0, first.stderr[-3000:]
    carried = subprocess.run([sys.executable, '-m', 'common.carry', 'elsewhere', 'carried'],
                             cwd=tmp_path, env=_env(), capture_output=True, text=True,
                             timeout=240)
    assert carried.returncode == 0, carried.stderr[-3000:]
    result = _suite(_preset_flags() + ['--games=pong', '--steps=40', '--suite_dir=suite',
                                       '--resume_from=carried'] + EVAL, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert '[1/1 pong] carried run carried (step 20' in result.stdout
    record = json.loads((tmp_path / 'suite' / 'pong' / app.RUN_FILE).read_text())
    assert record['sessions'][-1]['carried_from']['env_steps'] == 20
    steps = [int(row['env_steps']) for row in
             run_files.read_csv(tmp_path / 'suite' / 'pong' / 'metrics.csv')]
    assert steps[0] <= 20 < steps[-1] == 40  # the carried rows, then this session's
    assert int(run_files.read_csv(tmp_path / 'suite' / 'pong' / 'eval.csv')[-1]['env_steps']) \
        == 40
