"""seed_stats: the IQM and the stratified percentile bootstrap give rliable's numbers (Agarwal et
al. 2021), checked against hand computations and exactly enumerated resampling distributions."""
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

from common.launch import app
from common.tools import seed_stats


def test_iqm_cuts_a_quarter_from_each_end_as_scipy_trim_mean():
    assert seed_stats.iqm(range(1, 9)) == 4.5  # mean of 3, 4, 5, 6
    # n = 8, skewed: 2 cut from each end leaves 0, 1, 2, 4 (a 20% cut would leave 6: 2.5).
    assert seed_stats.iqm([16, 0, 8, 0, 4, 0, 2, 1]) == 1.75
    # n = 4: one cut from each end, the mean of 1 and 2.
    assert seed_stats.iqm([100, 0, 2, 1]) == 1.5
    # n = 6: 0.25 n = 1.5, so int(1.5) = 1 value is cut from each end: mean of 2, 3, 4, 5.
    assert seed_stats.iqm([100, 1, 5, 2, 4, 3]) == 3.5
    # n = 7: int(1.75) = 1: mean of 2, ..., 6; the outlier 1000 is cut.
    assert seed_stats.iqm([1, 2, 3, 4, 5, 6, 1000]) == 4.0
    # All values flattened: a (runs, games) matrix and per-game lists of different lengths.
    assert seed_stats.iqm(np.arange(1, 9).reshape(4, 2)) == 4.5
    assert seed_stats.iqm([[1, 2], [3, 4, 5, 6, 7, 8]]) == 4.5


def test_three_seeds_give_the_percentiles_of_all_27_resamples():
    """Seeds 0, 3, 9: the 27 equally likely resamples have means 0 (1 way), 1 (3), 2 (3), 3 (3 +
    1), 4 (6), 5 (3), 6 (3), 7 (3), 9 (1). P(0) = P(9) = 1/27 > 2.5%, so the 95% interval is
    (0, 9); the 5% point lies past 0 (cdf 1/27) within 1 (cdf 4/27), the 95% point past 6 (cdf
    23/27) within 7 (cdf 26/27): the 90% interval is (1, 7)."""
    assert seed_stats.bootstrap_ci([[0, 3, 9]], seed_stats.pooled_mean) == (4.0, 0.0, 9.0)
    assert seed_stats.bootstrap_ci([[0, 3, 9]], seed_stats.pooled_mean, confidence=0.9) == (
        4.0, 1.0, 7.0)


def _exact_interval(games, statistic, confidence):
    """The percentiles of the exact stratified resampling distribution: every combination of a
    resample per game, each equally likely. Asserts the percentile lies at least 0.005 inside a
    step of the distribution function (7 standard errors of 50,000 repetitions), so that the
    bootstrap's estimate is that step's value, not an interpolation."""
    per_game = [list(itertools.product(game, repeat=len(game))) for game in games]
    values = np.sort([statistic([np.array([draw]) for draw in combination])[0]
                      for combination in itertools.product(*per_game)])
    distinct, counts = np.unique(values, return_counts=True)
    cdf = np.cumsum(counts) / len(values)
    interval = []
    for q in ((1 - confidence) / 2, (1 + confidence) / 2):
        step = np.searchsorted(cdf, q)
        assert cdf[step] - q > 0.005 and q - (cdf[step - 1] if step else 0) > 0.005
        interval.append(distinct[step])
    return interval


def test_the_interval_is_the_exact_distributions_percentiles_inside_its_range():
    """Seeds 0, 1, 1, 4 (256 equally likely resamples): mean 0 needs four 0s, P = 1/256; mean
    0.25 three 0s and a 1, P = 4 (1/4)^3 (2/4) = 8/256: the cdf passes 2.5% at 0.25 (9/256 =
    3.5%). Mean 4 needs four 4s (1/256), 3.25 three 4s and a 1 (8/256), nothing lies between:
    P(mean >= 3.25) = 9/256 > 2.5%, so the 97.5% point is 3.25. Not the ends of the range."""
    seeds = [0.0, 1.0, 1.0, 4.0]
    assert _exact_interval([seeds], seed_stats.pooled_mean, 0.95) == [0.25, 3.25]
    assert seed_stats.bootstrap_ci([seeds], seed_stats.pooled_mean) == pytest.approx(
        (1.5, 0.25, 3.25), abs=1e-9)


def test_the_iqm_interval_over_two_games_is_the_exact_stratified_distributions():
    """Human-normalized 50, 100 on one game and 0, 100 on another: the 16 equally likely
    stratified resamples have IQMs (the mean of the middle two of four) 25 (3 ways), 50 (3), 75
    (5), 100 (5), so the 95% interval is (25, 100) and the 50% one (50, 100); IQM 75."""
    games = [[50.0, 100.0], [0.0, 100.0]]
    assert seed_stats.bootstrap_ci(games) == (75.0, 25.0, 100.0)
    assert seed_stats.bootstrap_ci(games, confidence=0.5) == (75.0, 50.0, 100.0)
    assert _exact_interval(games, seed_stats.pooled_iqm, 0.5) == [50.0, 100.0]
    # Two seeds of one game and three of another (4 x 27 resamples), IQM of five values.
    ragged = [[0.0, 40.0], [10.0, 20.0, 90.0]]
    exact = _exact_interval(ragged, seed_stats.pooled_iqm, 0.8)
    assert seed_stats.bootstrap_ci(ragged, confidence=0.8)[1:] == pytest.approx(exact, abs=1e-9)


def test_a_single_seed_gives_a_degenerate_interval_at_the_point():
    assert seed_stats.bootstrap_ci([[7.5]], seed_stats.pooled_mean) == (7.5, 7.5, 7.5)
    # One run on three games: the IQM of three values cuts int(0.75) = 0, the mean 12.5 / 3.
    assert seed_stats.bootstrap_ci(np.array([[7.5, 1.0, 4.0]])) == pytest.approx((12.5 / 3,) * 3)


def test_stratification_resamples_each_game_from_its_own_runs_only():
    """Games 0, 3, 9 and 1000, 1000, 1000: every resample keeps three runs of each, so its mean
    is (the first game's resampled mean + 1000) / 2; the first's 95% interval is (0, 9) (the
    27 resamples above), so this one is (500, 504.5), and at 90% ((1 + 1000) / 2, (7 + 1000) /
    2). Resampling the six pooled would reach 0 and 1000."""
    games = [np.array([0.0, 3.0, 9.0]), np.array([1000.0, 1000.0, 1000.0])]
    assert seed_stats.bootstrap_ci(games, seed_stats.pooled_mean) == (502.0, 500.0, 504.5)
    assert seed_stats.bootstrap_ci(games, seed_stats.pooled_mean, confidence=0.9) == (
        502.0, 500.5, 503.5)
    # The (runs, games) matrix of the same scores: the same draws, the same interval.
    matrix = np.array([[0.0, 1000.0], [3.0, 1000.0], [9.0, 1000.0]])
    assert seed_stats.bootstrap_ci(matrix, seed_stats.pooled_mean) == (502.0, 500.0, 504.5)
    samples = seed_stats.resample([np.array([0.0, 1.0]), np.array([10.0, 20.0, 30.0])], 10_000,
                                  np.random.default_rng(1))
    assert [sample.shape for sample in samples] == [(10_000, 2), (10_000, 3)]
    assert set(np.unique(samples[0])) == {0.0, 1.0}
    assert set(np.unique(samples[1])) == {10.0, 20.0, 30.0}


def test_a_seed_or_generator_makes_the_interval_reproducible():
    games = [[1.1, 5.3, 2.7, 8.9, 4.2], [30.5, 10.25, 20.125, 17.0]]
    first = seed_stats.bootstrap_ci(games, reps=1000, seed=3)
    assert seed_stats.bootstrap_ci(games, reps=1000, seed=np.random.default_rng(3)) == first
    assert seed_stats.bootstrap_ci(games, reps=1000, seed=4) != first


def test_importing_it_loads_no_tensorflow():
    result = subprocess.run(
        [sys.executable, '-c', 'import sys; import common.tools.seed_stats; '
         'print(sorted(name for name in sys.modules if name.split(".")[0] == "tensorflow"))'],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT),
        timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == '[]', result.stderr


def test_human_normalized_scores_and_the_iqm_row_name_the_games_left_out():
    """Pong random -20.7, human 9.3; Breakout 1.7, 31.8 (Mnih et al. 2015)."""
    assert seed_stats.human_normalized(-5.7, 'pong') == pytest.approx(50.0)
    assert seed_stats.human_normalized(31.8, 'breakout') == pytest.approx(100.0)
    assert seed_stats.human_normalized(200.0, 'CartPole-v1') is None
    groups = [{'game': 'pong', 'scores': [-5.7, 9.3]},
              {'game': 'CartPole-v1', 'scores': [200.0, 500.0]},
              {'game': 'breakout', 'scores': [1.7, 31.8]}]
    point, low, high, used, left_out = seed_stats.iqm_over_games(groups)
    assert (point, low, high) == pytest.approx((75.0, 25.0, 100.0))  # as the test above
    assert used == ['pong', 'breakout'] and left_out == ['CartPole-v1']
    assert seed_stats.iqm_over_games(groups[1:2])[:3] == (None, None, None)


def test_runs_are_grouped_by_game_and_config_without_the_seed_lines():
    config = ("# Parameters for AccelConfig:\nAccelConfig.algorithm = 'ppo'\n"
              "AccelConfig.seed = {seed}\nAccelConfig.seed_offset = 3\n"
              "AtariConfig.game = '{game}'\n")
    assert seed_stats.split_seed(config.format(seed=2, game='pong')) == (
        "# Parameters for AccelConfig:\nAccelConfig.algorithm = 'ppo'\n"
        "AccelConfig.seed_offset = 3\nAtariConfig.game = 'pong'", '2')
    assert seed_stats.split_seed('train/PAACConfig.seed = 0\n')[1] == '0'

    def run(name, score, seed, game='pong', algorithm='ppo'):
        text = config.format(seed=seed, game=game).replace("'ppo'", repr(algorithm))
        return {'run': name, 'game': game, 'config': text, 'score': score}
    groups = seed_stats.group_seeds([
        run('a', 18.0, 0), run('b', 20.0, 1), run('c', 10.0, 0, algorithm='a2c'),
        run('d', 13.0, 2), run('e', 30.0, 0, game='breakout'), run('f', float('nan'), 3),
        {'run': 'g', 'game': 'pong', 'config': None, 'score': 1.0}])
    assert [(group['runs'], group['seeds'], group['scores']) for group in groups] == [
        (['a', 'b', 'd'], ['0', '1', '2'], [18.0, 20.0, 13.0]), (['c'], ['0'], [10.0]),
        (['e'], ['0'], [30.0])]
    # Pong's and Breakout's PPO runs are one configuration on two games, A2C another.
    assert groups[0]['algorithm'] == groups[2]['algorithm'] != groups[1]['algorithm']
    assert seed_stats.group_row(groups[0]) == (17.0, 13.0, 20.0)
