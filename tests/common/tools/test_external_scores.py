"""external_scores: the rows give back the numbers as their sources print them (Dopamine's as the
mean of its stored runs), no row is missing or extra, every game is a known ale_py ROM id, every
source is described in the CSV's header, and an unknown game is named."""
import math
import re
import statistics

import ale_py.roms
import pytest

from common.system import errors
from common.tools import atari5
from common.tools import reference_scores

ATARI5_GAMES = ('battle_zone', 'double_dunk', 'name_this_game', 'phoenix', 'qbert')
GAMES = ATARI5_GAMES + ('pong', 'breakout')
TEN_MILLION = 10_000_000

# vwxyzjn/cleanrl, docs/benchmark/ppo_atari_envpool_xla_jax.md (commit fe8d8a03), as printed:
# game -> ((ppo_atari_envpool_xla_jax mean, std), (openai/baselines PPO2 mean, std)) at 10M steps.
CLEANRL = {
    'battle_zone': ((24283.75, 1841.94), (19980.00, 1355.21)),
    'double_dunk': ((-6.81, 0.24), (-12.96, 0.31)),
    'name_this_game': ((5750.00, 181.32), (6815.63, 1098.95)),
    'phoenix': ((14474.11, 1794.83), (9517.73, 1176.62)),
    'qbert': ((17246.27, 605.40), (15228.25, 920.95)),
    'pong': ((20.39, 0.24), (20.45, 0.81)),
    'breakout': ((430.09, 8.12), (405.73, 11.47)),
}
# DLR-RM/rl-baselines3-zoo, benchmark.md (commit 22e3ff24), as printed: (algo, game) ->
# (mean_reward, std_reward), every row of our games (n_timesteps 10M each).
RL_ZOO3 = {
    ('a2c', 'qbert'): (3882.345, 1223.327), ('a2c', 'pong'): (17.292, 3.214),
    ('a2c', 'breakout'): (279.793, 122.177),
    ('ppo', 'qbert'): (15627.108, 3313.538), ('ppo', 'pong'): (20.989, 0.105),
    ('ppo', 'breakout'): (398.033, 33.328),
    ('dqn', 'qbert'): (9496.774, 5399.633), ('dqn', 'pong'): (20.602, 0.613),
    ('dqn', 'breakout'): (358.327, 61.981),
    ('qrdqn', 'qbert'): (14799.728, 2917.629), ('qrdqn', 'pong'): (20.492, 0.687),
    ('qrdqn', 'breakout'): (393.600, 79.828),
}
DOPAMINE_AGENTS = ('dqn', 'c51', 'rainbow', 'iqn')
DOPAMINE_STEPS = tuple(million * 1_000_000 for million in range(1, 11))
# google/dopamine, baselines/atari/data/qbert.json (commit 5873f549): agent DQN's 5 values at
# Iteration 39, the iteration whose 250,000 agent steps end at 10M.
DOPAMINE_QBERT_DQN_ITERATION_39 = (6393.4497816593885, 6929.471544715447, 7510.0,
                                   6764.818548387097, 7017.174796747968)


def _all_rows():
    return [row for game in GAMES for row in reference_scores.external_scores(game)]


def _header():
    with open(reference_scores.EXTERNAL_SCORES_FILE, encoding='utf-8') as f:
        return [line.rstrip('\n') for line in f if line.startswith('#')]


def _of(game, source):
    return {row['algorithm']: row for row in reference_scores.external_scores(game)
            if row['source'] == source}


def test_cleanrl_as_printed():
    assert _of('qbert', 'cleanrl')['ppo_atari_envpool_xla_jax']['score'] == 17246.27
    for game, (ppo, ppo2) in CLEANRL.items():
        rows = _of(game, 'cleanrl')
        assert sorted(rows) == ['openai_baselines_ppo2', 'ppo_atari_envpool_xla_jax'], game
        ours, baselines = rows['ppo_atari_envpool_xla_jax'], rows['openai_baselines_ppo2']
        assert (ours['score'], ours['score_std'], ours['seeds']) == (*ppo, 3), game
        assert (baselines['score'], baselines['score_std'], baselines['seeds']) == (*ppo2, None)
        assert ours['env_steps'] == baselines['env_steps'] == TEN_MILLION
        assert 'no sticky actions' in ours['protocol'] and 'training' in ours['protocol']


def test_rl_zoo3_as_printed():
    rows = {(row['algorithm'], row['game']): row for row in _all_rows()
            if row['source'] == 'rl_zoo3'}
    assert sorted(rows) == sorted(RL_ZOO3)
    for key, (score, std) in RL_ZOO3.items():
        row = rows[key]
        assert (row['score'], row['score_std'], row['seeds']) == (score, std, 1), key
        assert row['env_steps'] == TEN_MILLION and 'evaluation' in row['protocol'], key


def test_dopamine_is_the_mean_of_its_runs():
    qbert_dqn = {row['env_steps']: row for row in reference_scores.external_scores('qbert')
                 if (row['source'], row['algorithm']) == ('dopamine', 'dqn')}
    values = DOPAMINE_QBERT_DQN_ITERATION_39
    assert qbert_dqn[TEN_MILLION]['score'] == round(statistics.fmean(values), 2) == 6922.98
    assert qbert_dqn[TEN_MILLION]['score_std'] == round(statistics.pstdev(values), 2) == 363.02
    assert qbert_dqn[TEN_MILLION]['seeds'] == 5
    assert 'sticky 0.25' in qbert_dqn[TEN_MILLION]['protocol']


def test_no_row_missing_or_extra():
    keys = [(row['source'], row['algorithm'], row['game'], row['env_steps']) for row in _all_rows()]
    expected = {('cleanrl', algorithm, game, TEN_MILLION) for game in CLEANRL
                for algorithm in ('ppo_atari_envpool_xla_jax', 'openai_baselines_ppo2')}
    expected |= {('rl_zoo3', algorithm, game, TEN_MILLION) for algorithm, game in RL_ZOO3}
    expected |= {('dopamine', agent, game, steps) for game in GAMES
                 for agent in DOPAMINE_AGENTS for steps in DOPAMINE_STEPS}
    assert len(keys) == len(set(keys)), 'a row is repeated'
    assert set(keys) == expected, (sorted(expected - set(keys)), sorted(set(keys) - expected))


def test_rows_typed():
    for row in _all_rows():
        assert isinstance(row['env_steps'], int) and isinstance(row['score'], float)
        assert isinstance(row['score_std'], float) and not math.isnan(row['score_std'])
        assert row['seeds'] is None or isinstance(row['seeds'], int)
    row = reference_scores.external_scores('qbert')[0]
    row['score'] = 0.0  # a caller's copy: the cached table keeps its number
    assert reference_scores.external_scores('qbert')[0]['score'] != 0.0


def test_every_game_known_and_an_ale_rom_id():
    games = {row['game'] for row in _all_rows()}
    assert games == set(GAMES)
    assert games <= set(ale_py.roms.get_all_rom_ids())
    # Phoenix is one of the 57 (atari57_scores.csv) but not of Mnih et al.'s 49 (known_games()).
    assert games - set(reference_scores.known_games()) == {'phoenix'}
    assert games <= set(atari5.games())


def test_every_source_described_in_the_header():
    header = '\n'.join(_header())
    described = re.findall(r'^# (\w+): ', header, flags=re.MULTILINE)
    assert sorted(described) == sorted({row['source'] for row in _all_rows()})
    for source, text in zip(described, re.split(r'^# \w+: ', header, flags=re.MULTILINE)[1:]):
        assert re.search(r'commit\s+(#\s+)?[0-9a-f]{40}', text), f'{source} names no commit'


def test_known_game_without_rows_and_unknown_game():
    assert reference_scores.external_scores('alien') == []
    with pytest.raises(errors.ConfigError,
                       match=r"game 'qbrt' is not a known game .*close matches: qbert"):
        reference_scores.external_scores('qbrt')
    with pytest.raises(errors.ConfigError, match="'Qbert-v5' is not a known game"):
        reference_scores.external_scores('Qbert-v5')


def test_the_text_at_given_steps_and_the_protocols_it_cites():
    text = reference_scores.external_score_text('qbert', TEN_MILLION)
    assert text.startswith('cleanrl ppo_atari_envpool_xla_jax 17246.3 +- 605.4, ')
    assert 'dopamine dqn 6923.0 +- 363.0' in text and len(text.split(', ')) == 2 + 4 + 4
    assert reference_scores.external_score_text('qbert', 40) == ''
    protocols = reference_scores.external_protocols([('qbert', 3_000_000), ('pong', 40)])
    assert sorted(protocols) == ['dopamine c51', 'dopamine dqn', 'dopamine iqn',
                                 'dopamine rainbow']
    assert all('sticky 0.25' in protocol for protocol in protocols.values())
