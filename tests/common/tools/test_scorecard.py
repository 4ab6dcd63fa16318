"""scorecard: the published runs' final evaluations per preset and Atari-5 game, normalized by hand,
summarized per preset, and written between markers in the results summary."""
import json
import math
import os

import pytest

from common import results
from common.launch import app
from common.tools import atari5
from common.tools import scorecard

PAAC = 'gin/paac/pong_fast.gin'
FAST = 'gin/fast/pong.gin'
SCORES = {'battle_zone': 5000.0, 'double_dunk': -17.0, 'name_this_game': 3000.0,
          'phoenix': 2000.0, 'qbert': 1000.0}


def _published(results_dir, name, game, preset, evals, paper='paac', bindings=()):
    """A published folder as common.results writes it: invocation, operative config, preset.json
    (started from preset with the game and bindings bound) and eval.csv rows (env_steps,
    episodes, mean)."""
    run_dir = os.path.join(results_dir, name)
    os.makedirs(run_dir)
    with open(os.path.join(run_dir, app.INVOCATION_FILE), 'w') as f:
        json.dump({'paper': paper, 'gin_files': ['gin/published/x.gin']}, f)
    with open(os.path.join(run_dir, app.OPERATIVE_CONFIG_FILE), 'w') as f:
        f.write(f"AtariConfig.game = '{game}'\n")
    with open(os.path.join(run_dir, 'preset.json'), 'w') as f:
        json.dump({'gin_files': ['gin/published/x.gin'], 'gin_bindings': [],
                   'started_as': {'gin_files': [preset],
                                  'gin_bindings': [f"AtariConfig.game = '{game}'",
                                                   *bindings]}}, f)
    with open(os.path.join(run_dir, 'metrics.csv'), 'w') as f:
        f.write('wall_time,env_steps,score_mean_100\n1,1000,0\n')
    with open(os.path.join(run_dir, 'eval.csv'), 'w') as f:
        f.write('wall_time,env_steps,episodes,score_mean,score_std\n')
        for steps, episodes, mean in evals:
            f.write(f'1,{steps},{episodes},{mean},1.0\n')
    return run_dir


@pytest.fixture(name='published')
def _published_runs(tmp_path):
    results_dir = str(tmp_path / 'results')
    runs = [_published(results_dir, f'paac-{game}', game, PAAC,
                       [(5_000_000, 30, -1e9), (10_000_000, 2, 0.0), (10_000_000, 30, score)])
            for game, score in SCORES.items()]
    # An older, shorter run of the same preset and game does not count; Pong is not Atari-5.
    runs.append(_published(results_dir, 'paac-qbert-short', 'qbert', PAAC, [(2_000_000, 30, 9e9)]))
    runs.append(_published(results_dir, 'paac-pong', 'pong', PAAC, [(10_000_000, 30, 20.0)]))
    runs.append(_published(results_dir, 'fast-qbert', 'qbert', FAST, [(3_000_000, 30, 663.8)],
                           paper='accel'))
    runs.append(_published(results_dir, 'fast-phoenix-unevaluated', 'phoenix', FAST, []))
    # Another seed counts as its preset's; a run with any other binding is not the preset's.
    runs.append(_published(results_dir, 'fast-qbert-seed-1', 'qbert', FAST,
                           [('', 30, 9e9), (1_000_000, 30, 500.0)], paper='accel',
                           bindings=['AccelConfig.seed = 1']))
    runs.append(_published(results_dir, 'paac-qbert-envs16', 'qbert', PAAC,
                           [(20_000_000, 30, 9e9)], bindings=['PAACConfig.num_envs = 16']))
    return results_dir, sorted(runs)


def test_each_preset_s_cells_are_its_final_evaluations_normalized_by_hand(published):
    _, runs = published
    names = {os.path.basename(run): scorecard.preset_of(run) for run in runs}
    assert names['fast-qbert-seed-1'] == FAST and names['paac-qbert-envs16'] is None
    cells = scorecard.cells(runs)
    assert list(cells) == [FAST, PAAC]
    assert list(cells[FAST]) == ['qbert']
    assert cells[FAST]['qbert']['run'] == 'fast-qbert'  # 3M beats seed 1's 1M (its blank row)
    assert sorted(cells[PAAC]) == sorted(SCORES)
    qbert = cells[PAAC]['qbert']
    # The last row at the last step: the suite's final 30 episodes, not the 2-episode round.
    assert (qbert['run'], qbert['score'], qbert['episodes'], qbert['env_steps']) == \
        ('paac-qbert', 1000.0, 30, 10_000_000)
    assert qbert['normalized'] == pytest.approx(100 * (1000 - 163.9) / (13455 - 163.9))
    # Phoenix is not among Mnih et al.'s 49: Badia et al.'s random 761.4, human 7242.6.
    assert cells[PAAC]['phoenix']['normalized'] == pytest.approx(
        100 * (2000 - 761.4) / (7242.6 - 761.4))
    assert cells[FAST]['qbert']['normalized'] == pytest.approx(100 * 499.9 / 13291.1)
    median, estimate = scorecard.preset_summary(cells[PAAC])
    assert median == pytest.approx(sorted(cell['normalized'] for cell in
                                          cells[PAAC].values())[2])
    assert estimate == pytest.approx(atari5.atari5_estimate(SCORES))
    median, estimate = scorecard.preset_summary(cells[FAST])
    assert median == pytest.approx(100 * 499.9 / 13291.1) and math.isnan(estimate)


def test_the_table_has_a_row_per_game_and_the_preset_summaries(published):
    _, runs = published
    lines = scorecard.markdown_block(runs, 'results/')
    end = lines.index('| game | papers | others at the same env steps |')
    table = [[cell.strip() for cell in line.strip('|').split('|')] for line in lines[:end]
             if line.startswith('| ')]
    assert table[0][4:] == [f'`{FAST}`', f'`{PAAC}`']
    rows = {row[0]: row for row in table[1:]}
    assert list(rows)[:5] == list(atari5.SUBSETS['atari5'].weights)
    assert rows['qbert'][1:4] == ['163.9', '13455', 'mnih2015']
    assert rows['qbert'][4] == '[663.8](results/fast-qbert/) (3.8%, 3M)'
    assert rows['qbert'][5] == '[1000.0](results/paac-qbert/) (6.3%, 10M)'
    assert rows['phoenix'][3] == 'agent57' and rows['phoenix'][4] == '-'
    assert rows['**median normalized**'][4] == '3.8% (1 of 5)'
    assert rows['**median normalized**'][5].endswith('% (5 of 5)')
    estimate = atari5.atari5_estimate(SCORES)
    assert rows['**Atari-5 estimate**'][4:6] == ['-', f'{estimate:.1f}%']


def test_the_references_are_the_papers_and_others_at_the_steps_each_preset_ran(published):
    _, runs = published
    references = {game: (papers, others) for game, papers, others in
                  scorecard.reference_rows(scorecard.cells(runs))}
    assert list(references) == list(atari5.SUBSETS['atari5'].weights)
    papers, others = references['qbert']
    # PAAC prints Q*Bert (Table 1); the accel paper's table is not in the repository as data.
    assert papers == 'paac: 16561.7 (archnips), 17249.2 (archnature)'
    # Q*Bert ran to 3M (the fast preset) and 10M (PAAC): Dopamine has 3M, all sources 10M.
    assert others.startswith('at 3M: dopamine dqn 1266.0 +- 589.6, ')
    assert '; at 10M: cleanrl ppo_atari_envpool_xla_jax 17246.3 +- 605.4, ' in others
    assert references['phoenix'][1].count('at ') == 1  # PAAC's 10M alone
    lines = scorecard.markdown_block(runs)
    assert '| qbert | ' + papers + ' | ' + others + ' |' in lines


def test_the_readme_glance_is_a_row_per_preset_and_cleanrl_s_ppo(published):
    _, runs = published
    lines = scorecard.glance_lines(runs)
    table = [[cell.strip() for cell in line.strip('|').split('|')] for line in lines]
    assert table[0] == ['final policy (% of human)', 'Battle Zone', 'Double Dunk',
                        'Name This Game', 'Phoenix', 'Q*bert', 'Atari-5']
    assert lines[1] == '|---|---|---|---|---|---|---|'
    fast, paac, cleanrl = table[2:]
    assert fast == [f'`{FAST}`, 3M', '-', '-', '-', '-', '664 (3.8%)', '-']
    estimate = atari5.atari5_estimate(SCORES)
    # Double Dunk: 100 x (-17 + 18.6) / (-15.5 + 18.6); a score under 100 keeps a decimal.
    assert paac == [f'`{PAAC}`, 10M', '5,000 (7.4%)', '-17.0 (51.6%)', '3,000 (39.7%)',
                    '2,000 (19.1%)', '1,000 (6.3%)', f'{estimate:.1f}%']
    # CleanRL's PPO at 10M steps (external_scores.csv): Q*Bert 17246.3, Battle Zone 24283.75.
    assert cleanrl[0] == 'CleanRL PPO, 10M (training)'
    assert cleanrl[1] == f'24,284 ({100 * (24283.75 - 2360) / (37800 - 2360):.1f}%)'
    assert cleanrl[5] == f'17,246 ({100 * (17246.3 - 163.9) / (13455 - 163.9):.1f}%)'
    assert cleanrl[6].endswith('%') and float(cleanrl[6][:-1]) > 0


def test_no_atari5_evaluation_says_so(tmp_path):
    run = _published(str(tmp_path), 'paac-pong', 'pong', PAAC, [(10_000_000, 30, 20.0)])
    assert scorecard.markdown_block([run])[-1] == \
        'No preset has a published evaluation on an Atari-5 game yet.'


def test_the_results_summary_gets_the_scorecard_between_markers_and_keeps_the_rest(published):
    results_dir, runs = published
    summary = results.summary_path(results_dir)
    with open(summary, 'w') as f:
        f.write('# Published runs\n\nWritten by hand.\n')
    results.write_scorecard([run for run in runs if run.endswith('paac-qbert')], results_dir)
    first = open(summary).read()
    assert first.startswith('# Published runs\n\nWritten by hand.\n\n## Atari-5 scorecard\n')
    assert scorecard.START in first and scorecard.END in first
    assert 'No preset has' not in first and f'`{PAAC}`' in first and f'`{FAST}`' not in first
    results.write_scorecard(runs, results_dir)
    second = open(summary).read()
    assert second.count('## Atari-5 scorecard') == 1 and second.count(scorecard.START) == 1
    assert f'`{FAST}`' in second and second.startswith('# Published runs\n\nWritten by hand.')
