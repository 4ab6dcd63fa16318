"""suite_table: a game outside Mnih et al.'s 49 gets the 57-game table's random and human scores
and says whose; the 49 keep theirs; a suite holding the Atari-5 games shows the Atari-5 estimate
(and Atari-3's, Atari-10's when held) beside the median and mean, in suite.md and suite.csv."""
import math

import pytest

from common.tools import atari5
from common.tools import run_files
from common.tools import suite_table


def _run_dir(tmp_path, game, score_mean_100=12.5):
    run_dir = tmp_path / game
    run_dir.mkdir()
    (run_dir / 'metrics.csv').write_text(f'env_steps,score_mean_100\n40,{score_mean_100}\n')
    return str(run_dir)


def _row(tmp_path, game, score):
    evaluation = {'score_mean': score, 'score_std': 1.0, 'episodes': 30, 'env_steps': 40}
    return suite_table.game_row(_run_dir(tmp_path, game), game, evaluation, 'dqn')


# Rainbow's no-op scores as maitchison/Atari-5's dataset.csv holds them (tests/common/tools/
# test_atari5.py): the Atari-5 estimate is 225.1046.
RAINBOW = {'battle_zone': 62010.0, 'double_dunk': -0.3, 'name_this_game': 13136.0,
           'phoenix': 108528.6, 'qbert': 33817.5}


def test_a_game_outside_the_49_is_normalized_by_the_57_game_table(tmp_path):
    row = _row(tmp_path, 'phoenix', 4001.0)
    # DQN Zoo's Phoenix: random 761.4, human 7242.6; 100 * 3239.6 / 6481.2 = 49.98457
    assert (row['random'], row['human'], row['reference']) == (761.4, 7242.6, 'agent57')
    assert row['normalized'] == pytest.approx(49.98457, abs=1e-4)
    assert row['train_score_mean_100'] == 12.5 and row['env_steps'] == 40


def test_the_49_games_keep_mnih_2015(tmp_path):
    row = _row(tmp_path, 'double_dunk', -16.4)
    # Mnih et al. (2015): random -18.6, human -15.5; 100 * 2.2 / 3.1 = 70.96774
    assert (row['random'], row['human'], row['reference']) == (-18.6, -15.5, 'mnih2015')
    assert row['normalized'] == pytest.approx(70.96774, abs=1e-4)


def test_a_suite_of_the_atari5_games_shows_the_estimate(tmp_path):
    rows = [_row(tmp_path, game, score) for game, score in RAINBOW.items()]
    table = suite_table.markdown(rows, '# Suite', 'two episodes')
    median, mean, count = suite_table.summary(rows)
    assert count == 5
    assert f'median {median:.1f}, mean {mean:.1f}' in table
    assert 'Atari-5 estimate of the 57-game median human-normalized score: 225.1 ' in table
    assert 'Atari-3 estimate of the 57-game median human-normalized score: ' in table
    assert 'Atari-10' not in table
    # The estimate's own normalization (Atari-5's table): Double Dunk 848.8, not the row's 603.2.
    assert 'double_dunk 848.8' in table
    double_dunk = next(row for row in rows if row['game'] == 'double_dunk')
    assert double_dunk['normalized'] == pytest.approx(100 * 18.3 / 3.1)
    assert 'mnih2015: Mnih et al. (2015)' in table and 'agent57: Badia et al. (2020)' in table
    _, csv_path = suite_table.write(str(tmp_path), rows, '# Suite', 'two episodes')
    by_game = {row['game']: row for row in run_files.read_csv(csv_path)}
    assert float(by_game['atari5_estimate']['normalized']) == pytest.approx(225.1046, abs=1e-3)
    assert float(by_game['atari3_estimate']['normalized']) == pytest.approx(
        atari5.atari3_estimate(RAINBOW))
    assert float(by_game['median']['normalized']) == pytest.approx(median)
    assert by_game['phoenix']['reference'] == 'agent57'
    assert by_game['qbert']['reference'] == 'mnih2015'


def test_no_estimate_without_every_game_evaluated(tmp_path):
    rows = [_row(tmp_path, game, score) for game, score in RAINBOW.items() if game != 'qbert']
    rows.append(suite_table.game_row(_run_dir(tmp_path, 'qbert'), 'qbert', None, 'dqn'))
    assert math.isnan(rows[-1]['normalized'])
    table = suite_table.markdown(rows, '# Suite', 'two episodes')
    assert 'Atari-5 estimate' not in table  # Q*Bert has no evaluation yet
    assert 'Atari-3 estimate' in table
    only_mnih = [row for row in rows if row['game'] != 'phoenix']
    table = suite_table.markdown(only_mnih, '# Suite', 'two episodes')
    assert 'estimate' not in table and 'agent57' not in table
    assert 'over the 3 evaluated game(s)' in table


def test_other_code_bases_scores_at_the_same_steps_and_their_protocols(tmp_path):
    at_40 = _row(tmp_path, 'qbert', 500.0)
    assert at_40['others_at_steps'] == ''  # nothing published at 40 steps
    evaluation = {'score_mean': 500.0, 'score_std': 1.0, 'episodes': 30, 'env_steps': 3_000_000}
    row = suite_table.game_row(_run_dir(tmp_path, 'pong'), 'pong', evaluation, 'paac')
    # Dopamine's Pong at 3M steps, one per agent (external_scores.csv), and no 10M-step source.
    assert row['others_at_steps'].startswith('dopamine dqn ')
    assert [part.split(' ')[1] for part in row['others_at_steps'].split(', ')] == [
        'dqn', 'c51', 'rainbow', 'iqn']
    table = suite_table.markdown([at_40, row], '# Suite', 'two episodes')
    assert "others_at_steps: other code bases' published scores at the same env steps" in table
    assert 'dopamine rainbow: NoFrameskip-v0 sticky 0.25' in table and 'cleanrl' not in table
    assert 'others_at_steps:' not in suite_table.markdown([at_40], '# Suite', 'two episodes')
