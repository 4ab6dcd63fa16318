"""Seed aggregation as rliable computes it (Agarwal et al. 2021, "Deep Reinforcement Learning at
the Edge of the Statistical Precipice", NeurIPS): a few seeds give a mean with a stratified
percentile-bootstrap 95% interval, and games an interquartile mean (IQM) of human-normalized
scores, rather than one run's point. numpy and scipy only: rliable itself would upgrade numpy.
"""
import re

import numpy as np
from scipy import stats

from common.system import errors
from common.tools import reference_scores

REPS = 50_000  # rliable's default number of bootstrap repetitions
# A line binding a parameter named seed ('AccelConfig.seed = 1', 'scope/PAACConfig.seed = 0').
_SEED_LINE = re.compile(r'^\s*(?:[\w./]+\.)?seed\s*=\s*(.*?)\s*$')
# The line binding the game (or gymnasium id), as run_files.read_game reads it.
_GAME_LINE = re.compile(r'^\s*(?:[\w./]+\.)?(?:game|env_id)\s*=')
_CHUNK = 4_000_000  # resampled values held at once (32 MB of float64)


def iqm(values):
    """Interquartile mean of all values flattened (rliable's metrics.aggregate_iqm): the mean
    after cutting int(0.25 * n) values from each end, as scipy.stats.trim_mean does."""
    return float(stats.trim_mean(_flat(values), proportiontocut=0.25, axis=None))


def _flat(values):
    if isinstance(values, (list, tuple)):
        return np.concatenate([np.ravel(np.asarray(part, dtype=float)) for part in values])
    return np.ravel(np.asarray(values, dtype=float))


def _per_game(scores):
    """A (runs, games) matrix or a list of per-game 1-D arrays, as a list of 1-D arrays."""
    if isinstance(scores, np.ndarray):
        matrix = scores.reshape(len(scores), -1) if scores.ndim < 2 else scores
        return [np.asarray(matrix[:, game], dtype=float) for game in range(matrix.shape[1])]
    return [np.ravel(np.asarray(game, dtype=float)) for game in scores]


def pooled_iqm(samples):
    """The IQM of each repetition: samples are per game (reps, runs) arrays."""
    return stats.trim_mean(np.concatenate(samples, axis=1), proportiontocut=0.25, axis=1)


def pooled_mean(samples):
    """The mean of each repetition over all its values."""
    return np.concatenate(samples, axis=1).mean(axis=1)


def resample(scores, reps, rng):
    """reps stratified resamples: per game, its runs drawn with replacement from its own runs
    only (rliable's StratifiedBootstrap); a list of (reps, runs of that game) arrays."""
    return [game[rng.integers(0, len(game), size=(reps, len(game)))] for game in scores]


def bootstrap_ci(scores, statistic=pooled_iqm, reps=REPS, confidence=0.95, seed=0):
    """(point, low, high): statistic of scores and the percentile interval of statistic over reps
    stratified resamples, as rliable's get_interval_estimates(method='percentile'). scores: a
    (runs, games) matrix or a list of per-game 1-D arrays (their lengths may differ); seed: an int
    or a numpy Generator."""
    scores = _per_game(scores)
    if not scores or any(len(game) == 0 for game in scores):
        raise errors.ConfigError('bootstrap_ci needs at least one score for every game')
    rng = np.random.default_rng(seed)
    point = float(statistic([game[np.newaxis, :] for game in scores])[0])
    chunk = max(1, _CHUNK // sum(len(game) for game in scores))
    values = np.concatenate([statistic(resample(scores, min(chunk, reps - start), rng))
                             for start in range(0, reps, chunk)])
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return point, float(low), float(high)


def human_normalized(score, game):
    """100 (score - random) / (human - random) by reference_scores.random_human_and_source;
    None for a game with no reference scores."""
    try:
        random, human, _ = reference_scores.random_human_and_source(game)
    except errors.ConfigError:
        return None
    return 100.0 * (score - random) / (human - random)


def split_seed(config_text):
    """(the config without its seed bindings, the seed values joined by ',' or '?')."""
    kept, seeds = [], []
    for line in config_text.splitlines():
        found = _SEED_LINE.match(line)
        if found:
            seeds.append(found.group(1))
        elif line.strip():
            kept.append(line.rstrip())
    return '\n'.join(kept), ','.join(seeds) or '?'


def group_seeds(runs):
    """Groups of runs that differ only in seed: runs are dicts (run, game, config: the
    operative_config.gin text or None, score); a run without a config or a finite score stays
    out. Per group in the order first met: dict runs, game, seeds, scores, and algorithm, the key
    its groups on other games share (the config without its game and seeds)."""
    groups = {}
    for run in runs:
        if run['config'] is None or not np.isfinite(run['score']) or run['game'] == '?':
            continue
        key, seed = split_seed(run['config'])
        group = groups.setdefault((run['game'], key), {
            'runs': [], 'game': run['game'], 'seeds': [], 'scores': [],
            'algorithm': '\n'.join(line for line in key.splitlines()
                                   if not _GAME_LINE.match(line))})
        group['runs'].append(run['run'])
        group['seeds'].append(seed)
        group['scores'].append(float(run['score']))
    return list(groups.values())


def group_row(group, reps=REPS, seed=0):
    """(mean score, 95% low, 95% high) over the group's seeds, resampling them."""
    return bootstrap_ci([group['scores']], pooled_mean, reps=reps, seed=seed)


def iqm_over_games(groups, reps=REPS, seed=0):
    """(IQM of human-normalized scores, 95% low, 95% high, games in it, games left out: no
    reference score) over groups of one algorithm on different games; the IQM is None when no
    game has a reference."""
    kept, used, left_out = [], [], []
    for group in groups:
        normalized = [human_normalized(score, group['game']) for score in group['scores']]
        if normalized[0] is None:
            left_out.append(group['game'])
        else:
            kept.append(normalized)
            used.append(group['game'])
    if not kept:
        return None, None, None, used, left_out
    return (*bootstrap_ci(kept, pooled_iqm, reps=reps, seed=seed), used, left_out)
