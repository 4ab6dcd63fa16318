"""The halfway look of a suite's game: a run still near its game's random score halfway through
its budget says so, once, with what to look at, before the rest of the budget is spent.

Near random: a training score (the mean of the last 100 episodes) at most 2 points, or 2% of
the human-random gap where that is more, above the random score (Mnih et al. 2015's, or the
57-game table's); a game whose lives, FIRE, action set, frames or rewards are handled wrong
stays there.
"""
import math
import os
import time

from common.tools import reference_scores
from common.tools import run_files

POINTS = 2.0
HUMAN_GAP_SHARE = 0.02
CHECK_EVERY_SECONDS = 60.0


def margin(game):
    """How far above random a score may be and still count as near random, for game."""
    random, human, _ = reference_scores.random_human_and_source(game)
    return max(POINTS, HUMAN_GAP_SHARE * (human - random))


def warning(game, steps, budget, score, run_dir):
    """The one line for a run of game at steps of budget with training score score, or None
    where the score is not near random (or not known yet)."""
    if score is None or math.isnan(score):
        return None
    random, _, _ = reference_scores.random_human_and_source(game)
    allowed = margin(game)
    if score - random > allowed:
        return None
    return (f'warning: {game} at {steps:,} of {budget:,} steps scores {score:.1f} (the last 100 '
            f'episodes), within {allowed:g} of random ({random:g}): look before the rest is '
            f'spent: python -m common.watch --run_dir={run_dir} (frames, action set, lives, '
            'FIRE, rewards)')


def last_row(run_dir):
    """(env steps, score_mean_100) of run_dir's newest whole metrics row, None without one (a
    row being written, cut short, is skipped)."""
    for row in reversed(run_files.read_csv(os.path.join(run_dir, 'metrics.csv'))):
        steps = run_files.number(row.get('env_steps'))
        if None not in row.values() and not math.isnan(steps):
            return int(steps), run_files.number(row.get('score_mean_100'))
    return None


class HalfwayLook:
    """Called on each output line of a game's run (child_runs.train's on_line): at most every
    CHECK_EVERY_SECONDS, reads the run's newest metrics row; at the first row at or past half
    the budget with a score, prints the warning if near random, once. .said holds the warning
    line (or None); .checked_at the steps it judged (None before the halfway row)."""

    def __init__(self, game, budget, run_dir, tag, clock=time.monotonic):
        self.game, self.budget, self.run_dir, self.tag = game, budget, run_dir, tag
        self.clock, self.next_check = clock, clock()
        self.checked_at, self.said = None, None

    def __call__(self, line):
        del line
        if self.checked_at is not None or self.clock() < self.next_check:
            return
        self.next_check = self.clock() + CHECK_EVERY_SECONDS
        newest = last_row(self.run_dir)
        if newest is None or 2 * newest[0] < self.budget or math.isnan(newest[1]):
            return  # not halfway, or no episode has ended yet: look again later
        self.checked_at = newest[0]
        self.said = warning(self.game, newest[0], self.budget, newest[1], self.run_dir)
        if self.said:
            print(f'{self.tag} {self.said}', flush=True)
