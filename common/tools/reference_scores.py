"""Reference Atari scores: random and human, to human-normalize ours, and each paper's own scores,
to print beside ours.

Random and human are Mnih et al. (2015)'s, as Daley & Amato (2021), Table 4 prints them for its 49
games (common/tools/atari_scores.csv). Each paper's scores are in <paper>_tf/paper_scores.csv:
PAAC from Clemente, Castejón and Chandra (2017), Table 1; GA3C from Babaeizadeh et al. (2017),
Table 3; fast DQN from Daley & Amato (2021), Table 4. Stooke & Abbeel (2018) print no per-game
scores, so accel_tf has no file. Games are ale_py ROM ids ('breakout', 'ms_pacman').

random_human_and_source reaches past those 49 games to the 57-game table of common/tools/atari5.py
(Badia et al. (2020) as DeepMind's DQN Zoo holds it) for the 8 games Mnih et al. (2015) did not
play, so a suite may hold any of the 57; the 49 keep Mnih et al.'s scores.

external_scores gives a game's scores published by other code bases (CleanRL's and openai/baselines'
PPO, rl-baselines3-zoo, Dopamine), each with its env steps and protocol, to print beside ours at the
same steps; common/tools/external_scores.csv's header says where each number was read.
"""
import csv
import difflib
import functools
import math
import os

from common.launch import app
from common.system import errors
from common.tools import atari5

# The scores whose time to reach is tabulated (common.results, common.sweep), per game; any other
# game has its human score alone (random_human_and_source's).
THRESHOLDS = {'pong': (-15.0, 0.0, 18.0), 'breakout': (30.0, 100.0, 300.0)}
ATARI_SCORES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'atari_scores.csv')
PAPER_SCORES_FILE = 'paper_scores.csv'
EXTERNAL_SCORES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    'external_scores.csv')
# Whose random and human scores random_human_and_source gives, and the words that cite them.
MNIH_2015, AGENT57 = 'mnih2015', 'agent57'
SOURCES = {MNIH_2015: 'Mnih et al. (2015) as fast DQN (Daley & Amato 2021) Table 4 prints them',
           AGENT57: "Badia et al. (2020) as DeepMind's DQN Zoo holds them"}


def _read_csv(path):
    """The rows of a CSV file as dicts keyed by its header."""
    with open(path, newline='', encoding='utf-8') as f:
        return list(csv.DictReader(f))


@functools.lru_cache(maxsize=None)
def _atari_scores():
    """{game: (random, human)} from atari_scores.csv, read once."""
    return {row['game']: (float(row['random']), float(row['human']))
            for row in _read_csv(ATARI_SCORES_FILE)}


def known_games():
    """Sorted ROM ids of the games that have random and human scores."""
    return sorted(_atari_scores())


def random_and_human(game):
    """(random, human) scores of game; ConfigError naming it (and close ids) when it has none."""
    scores = _atari_scores()
    if game not in scores:
        close = difflib.get_close_matches(str(game), scores, n=3)
        hint = f"; close matches: {', '.join(close)}" if close else ''
        raise errors.ConfigError(
            f'game {game!r} has no random/human score in Mnih et al. (2015) as Daley & Amato '
            f'(2021), Table 4 prints them{hint}')
    return scores[game]


def random_human_and_source(game):
    """(random, human, source): Mnih et al. (2015)'s scores for their 49 games (as
    random_and_human, source MNIH_2015), else those of the 57-game table (atari5.random_and_human,
    source AGENT57); ConfigError naming a game in neither (and close ids)."""
    scores = _atari_scores()
    if game in scores:
        return (*scores[game], MNIH_2015)
    if game in atari5.games():
        return (*atari5.random_and_human(game), AGENT57)
    close = difflib.get_close_matches(str(game), sorted(set(scores) | set(atari5.games())), n=3)
    hint = f"; close matches: {', '.join(close)}" if close else ''
    raise errors.ConfigError(
        f'game {game!r} has no random/human score in Mnih et al. (2015) nor in the 57-game table '
        f'of Badia et al. (2020){hint}')


def thresholds_of(game, thresholds=THRESHOLDS):
    """thresholds[game], else the game's human score alone (Mnih et al. 2015's, else the 57-game
    table's: random_human_and_source), else () (a gymnasium id)."""
    if game in thresholds:
        return tuple(thresholds[game])
    try:
        return (random_human_and_source(game)[1],)
    except errors.ConfigError:
        return ()


def normalized(score, game):
    """Human-normalized score in percent: 100 * (score - random) / (human - random)."""
    random, human = random_and_human(game)
    return 100.0 * (score - random) / (human - random)


def paper_scores(paper):
    """The scores paper ('paac', 'ga3c', 'dqn') prints, as dicts (game, setting, score, std: float
    or nan, env_steps: int or None, source) from <paper>_tf/paper_scores.csv; [] without one."""
    path = os.path.join(app.PROJECT_ROOT, f'{paper}_tf', PAPER_SCORES_FILE)
    if not os.path.isfile(path):
        return []
    return [{'game': row['game'], 'setting': row['setting'], 'score': float(row['score']),
             'std': float(row['std']) if row['std'] else math.nan,
             'env_steps': int(row['env_steps']) if row['env_steps'] else None,
             'source': row['source']}
            for row in _read_csv(path)]


def _number(value):
    """A score as a short text: 470.1, 18, 100523.3 (no exponent, no trailing zeros)."""
    return f'{value:.10g}'


def paper_score_text(paper, game):
    """The paper's scores for game in one line, e.g. '470.1 (archnips), 565.3 (archnature)' or
    '373.4 +- 95.1 (fast_dqn)'; '' when it prints none."""
    parts = []
    for row in paper_scores(paper):
        if row['game'] == game:
            spread = '' if math.isnan(row['std']) else f" +- {_number(row['std'])}"
            parts.append(f"{_number(row['score'])}{spread} ({row['setting']})")
    return ', '.join(parts)


@functools.lru_cache(maxsize=None)
def _external_scores():
    """The rows of external_scores.csv with typed numbers, read once; its '#' lines are its header
    comment."""
    with open(EXTERNAL_SCORES_FILE, newline='', encoding='utf-8') as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith('#')))
    return tuple({'source': row['source'], 'algorithm': row['algorithm'], 'game': row['game'],
                  'env_steps': int(row['env_steps']), 'score': float(row['score']),
                  'score_std': float(row['score_std']) if row['score_std'] else math.nan,
                  'seeds': int(row['seeds']) if row['seeds'] else None,
                  'protocol': row['protocol']}
                 for row in rows)


def external_scores(game):
    """Other code bases' published scores of game, as dicts (source, algorithm, game,
    env_steps: int, score: float, score_std: float or nan, seeds: int or None, protocol) from
    external_scores.csv; [] for a known game it lacks. Known games: those of known_games() and the
    57 of common/tools/atari57_scores.csv (Phoenix is not among Mnih et al.'s 49); ConfigError
    naming any other (and close ids)."""
    known = sorted(set(known_games()) | set(atari5.games()))
    if game not in known:
        close = difflib.get_close_matches(str(game), known, n=3)
        hint = f"; close matches: {', '.join(close)}" if close else ''
        raise errors.ConfigError(
            f'game {game!r} is not a known game (the ale_py ROM ids of '
            f'common/tools/atari_scores.csv and atari57_scores.csv), so it has no external '
            f'scores{hint}')
    return [dict(row) for row in _external_scores() if row['game'] == game]


def external_score_text(game, env_steps):
    """Other code bases' scores of game at exactly env_steps, one 'source algorithm mean +- std'
    each, joined by ', '; '' where none is published at those steps."""
    return ', '.join(
        f"{row['source']} {row['algorithm']} {row['score']:.1f}"
        + ('' if math.isnan(row['score_std']) else f" +- {row['score_std']:.1f}")
        for row in external_scores(game) if row['env_steps'] == env_steps)


def external_protocols(games_and_steps):
    """{'source algorithm': its protocol} of the external rows at (game, env_steps) of
    games_and_steps: what a table citing external_score_text says under it."""
    return {f"{row['source']} {row['algorithm']}": row['protocol']
            for game, env_steps in games_and_steps for row in external_scores(game)
            if row['env_steps'] == env_steps}
