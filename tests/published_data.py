"""What tests/test_documented_numbers.py reads of a published run (docs/results/RUN): its curve
(the resumed history), scores reached, best and nearest rows, evaluations, clock and memory,
formatted as the documents print them."""
import json
import math
import os
import statistics

from common.launch import app
from common.run import superseded
from common.tools import atari5
from common.tools import memory_report
from common.tools import run_clock
from common.tools import scorecard
from common.tools import run_files

RESULTS = os.path.join(app.PROJECT_ROOT, 'docs', 'results')


def _rows(run):
    return superseded.resumed_history(run_files.read_csv(os.path.join(RESULTS, run,
                                                                      'metrics.csv')))


def _first(run, score):
    """(env steps, training minutes) of the first row whose 100-episode mean reaches score."""
    for row in _rows(run):
        if run_files.number(row['score_mean_100']) >= score:
            return int(row['env_steps']), float(row['wall_time']) / 60
    raise AssertionError(f'{run} never reaches {score}')


def _mean_near(run, steps):
    """The 100-episode mean of the row nearest env steps."""
    row = min(_rows(run), key=lambda row: abs(int(row['env_steps']) - steps))
    return run_files.number(row['score_mean_100'])


def _best(run):
    """(best 100-episode mean, its env steps)."""
    row = max((row for row in _rows(run) if not math.isnan(run_files.number(
        row['score_mean_100']))), key=lambda row: run_files.number(row['score_mean_100']))
    return run_files.number(row['score_mean_100']), int(row['env_steps'])


def _eval_at(run, steps):
    rows = run_files.read_csv(os.path.join(RESULTS, run, 'eval.csv'))
    row = min(rows, key=lambda row: abs(int(row['env_steps']) - steps))
    return float(row['score_mean']), float(row['score_std'])


def _curve_and_evaluation(run, game, steps, final_steps):
    """What a published game's sentence quotes: the 100-episode means at the three steps, the best
    mean and its steps (as '2.78M'), the mean at final_steps, the final evaluation's (mean, std,
    min, max) and its human-normalized %."""
    best, best_steps = _best(run)
    evaluation = _final_eval(run)
    return (*(_mean_near(run, at) for at in steps), best, _m(best_steps, 2),
            _mean_near(run, final_steps), *evaluation, scorecard.normalized(evaluation[0], game))


def _capped_games(run, cap, after):
    """Training games of run that ran to the cap (agent steps): (the env steps of the first, as
    '1.17M'; how many of the games ended after env steps `after`; how many of those; their mean
    score; the lowest and highest score of the others after it)."""
    games = run_files.read_csv(os.path.join(RESULTS, run, 'episodes.csv'))
    capped = [int(game['env_steps']) for game in games if int(game['length']) >= cap]
    late = [game for game in games if int(game['env_steps']) > after]
    late_capped = [float(game['score']) for game in late if int(game['length']) >= cap]
    others = [float(game['score']) for game in late if int(game['length']) < cap]
    return (_m(capped[0], 2), len(late_capped), len(late), statistics.mean(late_capped),
            min(others), max(others))


def _final_eval(run):
    """(mean, std, min, max) of the final policy's evaluation, as the scorecard reads it."""
    row = scorecard.final_evaluation(os.path.join(RESULTS, run))
    return tuple(float(row[key]) for key in ('score_mean', 'score_std', 'score_min', 'score_max'))


def _final_eval_seconds(run):
    """How long the final policy's evaluation took (eval.csv's seconds)."""
    return float(scorecard.final_evaluation(os.path.join(RESULTS, run))['seconds'])


def _carried_stats(run):
    """A run carried once between two machines: (its clock hours, starved hours, highest CPU steal,
    median steps/s before the carry, after it) (run.json's carried_from)."""
    with open(os.path.join(RESULTS, run, 'run.json')) as f:
        carried_at = json.load(f)['sessions'][-1]['carried_from']['env_steps']
    rows = _rows(run)
    run_dir = os.path.join(RESULTS, run)
    held = run_clock.lost_share(rows, run_clock.read_cores(run_dir), run_files.read_csv(
        os.path.join(run_dir, 'eval.csv')))[0] / 3600
    rates = [[float(row['steps_per_sec']) for row in rows
              if (int(row['env_steps']) > carried_at) == after] for after in (False, True)]
    return (float(rows[-1]['wall_time']) / 3600, held,
            max(run_files.number(row['steal_pct']) for row in rows),
            *(statistics.median(rate) for rate in rates))


def _clock_and_rate(run):
    """'<hours> hours on the clock, median <steps/s> steps/s' of a run in one machine's sessions."""
    rows = _rows(run)
    return '{0:.2f} hours on the clock, median {1:,.0f} steps/s'.format(
        float(rows[-1]['wall_time']) / 3600,
        statistics.median(float(row['steps_per_sec']) for row in rows))


def _eval_and_episodes(run, steps):
    rows = run_files.read_csv(os.path.join(RESULTS, run, 'eval.csv'))
    row = min(rows, key=lambda row: abs(int(row['env_steps']) - steps))
    return float(row['score_mean']), int(row['episodes'])


def _memory(run):
    """(start MB, window start steps, range %, window minutes, MB per hour) of the run's memory
    after its warm-up, as common.compare --memory prints it."""
    result = memory_report.report(run_files.read_csv(os.path.join(RESULTS, run, 'metrics.csv')))
    return (result['start_mb'], _m(result['window_start_steps'], 2), result['range_pct'],
            result['window_minutes'], result['mb_per_hour'])


def _memory_span(run):
    """(start MB, end MB, range %) of the run's memory over its last session after the warm-up."""
    result = memory_report.report(run_files.read_csv(os.path.join(RESULTS, run, 'metrics.csv')))
    return result['start_mb'], result['end_mb'], result['range_pct']


def _atari5_estimates(preset_row_start):
    """The Atari-5 estimate (its text) of the README table's row that starts with
    preset_row_start, and of its CleanRL PPO row, from the published runs."""
    lines = scorecard.glance_lines(_published_runs())
    last_cell = {line.split(' | ')[0].lstrip('| '): line.rstrip(' |').split(' | ')[-1]
                 for line in lines}
    preset = next(value for key, value in last_cell.items() if key.startswith(preset_row_start))
    cleanrl = next(value for key, value in last_cell.items() if key.startswith('CleanRL'))
    return preset, cleanrl


def _atari5_with_human(runs_by_game, game):
    """The Atari-5 estimate of the published runs {game: run} with game's score replaced by its
    human score (atari5's own table, the one the regression was fit on)."""
    scores = {name: _final_eval(run)[0] for name, run in runs_by_game.items()}
    scores[game] = atari5.random_and_human(game, atari5.ATARI5)[1]
    return atari5.atari5_estimate(scores)


def _published_runs():
    """The published run folders (those with a metrics.csv), sorted."""
    return sorted(os.path.join(RESULTS, name) for name in os.listdir(RESULTS)
                  if os.path.isfile(os.path.join(RESULTS, name, 'metrics.csv')))


def _m(steps, digits):
    return f'{steps / 1e6:.{digits}f}M'


def _reach(run, score, steps_digits, minutes_digits=0, hours=False):
    """'<steps>M' and '<minutes> min' (or '<hours> h') of the first row reaching score."""
    steps, minutes = _first(run, score)
    clock = f'{minutes / 60:.1f} h' if hours else f'{minutes:.{minutes_digits}f} min'
    return _m(steps, steps_digits), clock

