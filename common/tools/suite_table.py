"""The table of a game suite: per game its steps, final training mean, evaluation (mean, std),
random and human scores, the human-normalized score 100 x (score - random) / (human - random)
of the evaluation mean, and the paper's own score; then the median and mean normalized score
over the games evaluated. Written as markdown and CSV into the suite directory."""
import csv
import math
import os
import statistics

from common.tools import reference_scores
from common.tools import run_files

COLUMNS = ('game', 'env_steps', 'train_score_mean_100', 'eval_score_mean', 'eval_score_std',
           'eval_episodes', 'random', 'human', 'normalized', 'paper_score')
TABLE_FILES = ('suite.md', 'suite.csv')


def game_row(run_dir, game, evaluation, paper):
    """One row: the run's last training mean (metrics.csv, superseded rows left out) and its
    suite evaluation (a row as common.evaluate writes it, or None before it has one)."""
    from common.run import superseded  # pylint: disable=import-outside-toplevel
    rows = superseded.resumed_history(run_files.read_csv(os.path.join(run_dir, 'metrics.csv')))
    scores = [run_files.number(row.get('score_mean_100')) for row in rows]
    scores = [score for score in scores if not math.isnan(score)]
    random, human = reference_scores.random_and_human(game)
    mean = float(evaluation['score_mean']) if evaluation else math.nan
    return {
        'game': game,
        'env_steps': int(evaluation['env_steps']) if evaluation else
        int(run_files.number(rows[-1]['env_steps'])) if rows else 0,
        'train_score_mean_100': scores[-1] if scores else math.nan,
        'eval_score_mean': mean,
        'eval_score_std': float(evaluation['score_std']) if evaluation else math.nan,
        'eval_episodes': int(evaluation['episodes']) if evaluation else 0,
        'random': random,
        'human': human,
        'normalized': reference_scores.normalized(mean, game) if evaluation else math.nan,
        'paper_score': reference_scores.paper_score_text(paper, game),
    }


def summary(rows):
    """(median, mean, count) of the normalized scores of the rows that have one."""
    values = [row['normalized'] for row in rows if not math.isnan(row['normalized'])]
    if not values:
        return math.nan, math.nan, 0
    return statistics.median(values), statistics.fmean(values), len(values)


def _cell(value):
    if isinstance(value, float):
        return '-' if math.isnan(value) else f'{value:.1f}'
    if isinstance(value, int):
        return f'{value:,}'
    return value or '-'


def markdown(rows, heading, protocol):
    """The table as markdown under heading, with the suite's median and mean normalized score;
    protocol: how the evaluation played."""
    median, mean, count = summary(rows)
    lines = [heading, '', '| ' + ' | '.join(COLUMNS) + ' |', '|' + '---|' * len(COLUMNS)]
    lines += ['| ' + ' | '.join(_cell(row[column]) for column in COLUMNS) + ' |'
              for row in rows]
    lines += ['', f'Human-normalized score over the {count} evaluated game(s): median '
              f'{_cell(median)}, mean {_cell(mean)} (100 = human, 0 = random; random and human '
              'scores of Mnih et al. (2015) as fast DQN (Daley & Amato 2021) Table 4 prints '
              f'them). Evaluation of the final policy: {protocol}.', '']
    return '\n'.join(lines)


def write(suite_dir, rows, heading, protocol):
    """Writes suite.md and suite.csv into suite_dir; returns their paths."""
    md_path, csv_path = (os.path.join(suite_dir, name) for name in TABLE_FILES)
    with open(md_path, 'w') as f:
        f.write(markdown(rows, heading, protocol))
    median, mean, _ = summary(rows)
    with open(csv_path, 'w', newline='') as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
        writer.writerow({'game': 'median', 'normalized': median})
        writer.writerow({'game': 'mean', 'normalized': mean})
    return md_path, csv_path
