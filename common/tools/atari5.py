"""The random and human scores of the 57 Atari games, the human-normalized score, and the Atari-5
estimate of the 57-game median human-normalized score from five games' scores.

Why: a run of all 57 games is out of reach here; Aitchison, Sweetser & Hutter (2023), "Atari-5:
Distilling the Arcade Learning Environment down to Five Games" (ICML; code
github.com/maitchison/Atari-5) fit a linear regression that predicts an algorithm's 57-game median
from five games (Battle Zone, Double Dunk, Name This Game, Phoenix, Q*Bert), within about 10%.

The table, common/tools/atari57_scores.csv (games are ale_py ROM ids), holds two pairs of columns:

- random, human: DeepMind's DQN Zoo, dqn_zoo/atari_data.py (google-deepmind/dqn_zoo, commit
  359945dc, the same values as its first commit 402ba5c8), the table of Badia et al. (2020),
  Agent57, that 57-game papers normalize by. The file names no source; the 15 games whose random
  and human scores Cuccu et al. (2021, doi:10.1007/s10458-021-09497-8, Table 3) take "directly
  from" Agent57's paper agree with it to their rounding (whole numbers).
  human_normalized uses these by default.
- atari5_random, atari5_human: the Random and Human columns of Atari-Human.csv in
  maitchison/Atari-5 (commit 118cad54), the table its atari5.py merges into every algorithm's
  scores before the regression (its DQN_Random and Human_Top columns are not used there). The
  estimate normalizes with these, as the regression was fit on them.

Where the two pairs differ the CSV's note column says so, value by value. Beyond rounding (Atari-5
prints two decimals, DQN Zoo one) they differ on two games only: Video Pinball's random score
(Atari-5 0, DQN Zoo 16256.9) and Space Invaders' random score (148.3 and 148.0). The note also
lists where DQN Zoo differs from Mnih et al. (2015) as common/tools/atari_scores.csv holds them
(fast DQN's Table 4): no random score beyond rounding, and the human score of 33 of those 49 games.

The estimate, as maitchison/Atari-5's atari5.py fits it (transform, inv_transform, LinearRegression
with fit_intercept=False since USE_INTERCEPT = False) and its author's AtariScoreNormalizer
.subset_score computes it (maitchison/PPO, tools/plot_util.py, commit d3e32282):

    x_g = 100 * (score_g - random_g) / (human_g - random_g)     (Atari-5's random and human)
    estimate = 10 ** (sum_g w_g * log10(1 + max(x_g, 0))) - 1    (no intercept)

The weights are those AtariScoreNormalizer.SUBSETS holds (unchanged there since April 2022): the
Atari-5 repository stores no fitted weights (its README is a title; atari5.py prints them when
run). Refitting atari5.py's regression (log10(1 + median over the algorithm's Atari-57 games) on
the five games' log10(1 + max(x, 0)), least squares, no intercept, over the algorithms in
maitchison/Atari-5's dataset.csv that have all the subset's games) gives the same weights to 1e-15
for Atari-5 (44 algorithms), Atari-3 (45) and Atari-10 (42). Each subset's relative error is the
one SUBSETS records: 10-fold cross-validated mean absolute error of the log10 estimate, times
ln 10 times 100, in percent.
"""
import collections
import csv
import difflib
import functools
import math
import os

from common.system import errors

__all__ = ('SCORES_FILE', 'AGENT57', 'ATARI5', 'SUBSETS', 'Subset', 'games', 'random_and_human',
           'human_normalized', 'subset_estimate', 'atari5_estimate', 'atari3_estimate',
           'atari10_estimate', 'subsets_within')

SCORES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'atari57_scores.csv')
AGENT57 = 'agent57'  # DQN Zoo's random and human (Badia et al. 2020)
ATARI5 = 'atari5'    # maitchison/Atari-5's Atari-Human.csv, which the regression was fit on
_COLUMNS = {AGENT57: ('random', 'human'), ATARI5: ('atari5_random', 'atari5_human')}

Subset = collections.namedtuple('Subset', 'title weights relative_error')
Subset.__doc__ = """A game subset's regression: title, {game: weight} in the paper's order, and
the relative error (percent) its code reports for the estimate."""

SUBSETS = {
    'atari5': Subset('Atari-5', {
        'battle_zone': 0.3819751237831753,
        'double_dunk': 0.0679099488887574,
        'name_this_game': 0.310804148620847,
        'phoenix': 0.12412619402774641,
        'qbert': 0.08048518286466755,
    }, 10.4),
    'atari3': Subset('Atari-3', {
        'battle_zone': 0.3705645071598444,
        'name_this_game': 0.513268255229986,
        'phoenix': 0.10151691314166367,
    }, 13.7),
    'atari10': Subset('Atari-10', {
        'amidar': 0.08246357439570691,
        'bowling': 0.0559032813915904,
        'frostbite': 0.06912572845204429,
        'kung_fu_master': 0.09861731598935165,
        'riverraid': 0.048594292965417056,
        'battle_zone': 0.18882008828001498,
        'double_dunk': 0.08519154019954558,
        'name_this_game': 0.12869695652405946,
        'phoenix': 0.16432707026384483,
        'qbert': 0.05922863791062832,
    }, 7.2),
}


@functools.lru_cache(maxsize=None)
def _table():
    """{game: its CSV row}, read once; the file's '#' lines are its header comment."""
    with open(SCORES_FILE, newline='', encoding='utf-8') as f:
        return {row['game']: row
                for row in csv.DictReader(line for line in f if not line.startswith('#'))}


def games():
    """Sorted ROM ids of the 57 games."""
    return sorted(_table())


def random_and_human(game, table=AGENT57):
    """(random, human) of game from table (AGENT57 or ATARI5); ConfigError (a ValueError) naming
    a game that is not one of the 57, with close ids."""
    if table not in _COLUMNS:
        raise errors.ConfigError(f'table={table!r}: one of {", ".join(_COLUMNS)}')
    rows = _table()
    if game not in rows:
        close = difflib.get_close_matches(str(game), rows, n=3)
        hint = f"; close matches: {', '.join(close)}" if close else ''
        raise errors.ConfigError(f'game {game!r} is not one of the 57 Atari games of '
                                 f'{os.path.basename(SCORES_FILE)}{hint}')
    random_column, human_column = _COLUMNS[table]
    return float(rows[game][random_column]), float(rows[game][human_column])


def human_normalized(game, score, table=AGENT57):
    """Human-normalized score in percent, 100 * (score - random) / (human - random), by table."""
    random, human = random_and_human(game, table)
    return 100.0 * (score - random) / (human - random)


def _missing(scores_by_game, wanted):
    def has(game):
        try:
            return not math.isnan(float(scores_by_game[game]))
        except (KeyError, TypeError, ValueError):
            return False
    return [game for game in wanted if not has(game)]


def subset_estimate(subset, scores_by_game):
    """The estimate of the 57-game median human-normalized score (percent) from the raw game
    scores of subset ('atari5', 'atari3', 'atari10'); scores_by_game maps ROM ids to raw scores
    (other games are ignored). ConfigError (a ValueError) in one line naming the missing games."""
    if subset not in SUBSETS:
        raise errors.ConfigError(f'subset={subset!r}: one of {", ".join(SUBSETS)}')
    title, weights, _ = SUBSETS[subset]
    missing = _missing(scores_by_game, weights)
    if missing:
        raise errors.ConfigError(f'the {title} estimate needs a score for each of '
                                 f'{", ".join(weights)}; missing: {", ".join(missing)}')
    total = sum(weight * math.log10(
        1.0 + max(human_normalized(game, float(scores_by_game[game]), ATARI5), 0.0))
                for game, weight in weights.items())
    return 10.0 ** total - 1.0


def atari5_estimate(scores_by_game):
    """subset_estimate('atari5', scores_by_game): Battle Zone, Double Dunk, Name This Game,
    Phoenix, Q*Bert."""
    return subset_estimate('atari5', scores_by_game)


def atari3_estimate(scores_by_game):
    """subset_estimate('atari3', scores_by_game): Battle Zone, Name This Game, Phoenix."""
    return subset_estimate('atari3', scores_by_game)


def atari10_estimate(scores_by_game):
    """subset_estimate('atari10', scores_by_game): Atari-5 and Amidar, Bowling, Frostbite,
    Kung-Fu Master, River Raid."""
    return subset_estimate('atari10', scores_by_game)


def subsets_within(games_with_scores):
    """The subsets (largest first) whose games all are in games_with_scores."""
    have = set(games_with_scores)
    return sorted((name for name, subset in SUBSETS.items() if set(subset.weights) <= have),
                  key=lambda name: -len(SUBSETS[name].weights))
