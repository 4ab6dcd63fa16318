"""The table of a game suite: per game its steps, final training mean, evaluation (mean, std),
random and human scores and whose they are, the human-normalized score 100 x (score - random) /
(human - random) of the evaluation mean, the paper's own score and other code bases' published
scores at the same env steps (CleanRL, rl-baselines3-zoo, Dopamine); then the median and mean
normalized score over the games evaluated, and, when the evaluated games hold Atari-5 (or Atari-3,
Atari-10), its estimate of the 57-game median (common/tools/atari5.py: Aitchison, Sweetser & Hutter
2023). Written as markdown and CSV into the suite directory."""
import csv
import math
import os
import statistics

from common.tools import atari5
from common.tools import reference_scores
from common.tools import run_files

COLUMNS = ('game', 'env_steps', 'train_score_mean_100', 'eval_score_mean', 'eval_score_std',
           'eval_episodes', 'random', 'human', 'reference', 'normalized', 'paper_score',
           'others_at_steps')
TABLE_FILES = ('suite.md', 'suite.csv')


def game_row(run_dir, game, evaluation, paper):
    """One row: the run's last training mean (metrics.csv, superseded rows left out) and its
    suite evaluation (a row as common.evaluate writes it, or None before it has one)."""
    from common.run import superseded  # pylint: disable=import-outside-toplevel
    rows = superseded.read_history(os.path.join(run_dir, 'metrics.csv'))
    scores = [run_files.number(row.get('score_mean_100')) for row in rows]
    scores = [score for score in scores if not math.isnan(score)]
    random, human, source = reference_scores.random_human_and_source(game)
    mean = float(evaluation['score_mean']) if evaluation else math.nan
    row = {
        'game': game,
        'env_steps': int(evaluation['env_steps']) if evaluation else
        int(run_files.number(rows[-1]['env_steps'])) if rows else 0,
        'train_score_mean_100': scores[-1] if scores else math.nan,
        'eval_score_mean': mean,
        'eval_score_std': float(evaluation['score_std']) if evaluation else math.nan,
        'eval_episodes': int(evaluation['episodes']) if evaluation else 0,
        'random': random,
        'human': human,
        'reference': source,
        'normalized': 100.0 * (mean - random) / (human - random) if evaluation else math.nan,
        'paper_score': reference_scores.paper_score_text(paper, game),
    }
    row['others_at_steps'] = reference_scores.external_score_text(game, row['env_steps'])
    return row


def summary(rows):
    """(median, mean, count) of the normalized scores of the rows that have one."""
    values = [row['normalized'] for row in rows if not math.isnan(row['normalized'])]
    if not values:
        return math.nan, math.nan, 0
    return statistics.median(values), statistics.fmean(values), len(values)


def estimates(rows):
    """Per subset of atari5.SUBSETS whose games all have an evaluation here (largest first):
    (name, estimate of the 57-game median, {game: its score normalized as the estimate does})."""
    scores = {row['game']: row['eval_score_mean'] for row in rows
              if not math.isnan(row['eval_score_mean'])}
    return [(name, atari5.subset_estimate(name, scores),
             {game: atari5.human_normalized(game, scores[game], atari5.ATARI5)
              for game in atari5.SUBSETS[name].weights})
            for name in atari5.subsets_within(scores)]


def _estimate_lines(rows):
    lines = []
    for name, estimate, normalized in estimates(rows):
        title, _, error = atari5.SUBSETS[name]
        terms = ', '.join(f'{game} {value:.1f}' for game, value in normalized.items())
        lines.append(
            f'{title} estimate of the 57-game median human-normalized score: {estimate:.1f} '
            f'(Aitchison, Sweetser & Hutter 2023, relative error about {error}%): 10^(sum of '
            f'weight x log10(1 + max(x, 0))) - 1 over x = {terms}, each evaluation mean '
            'normalized by the random and human scores the regression was fit on '
            "(maitchison/Atari-5's Atari-Human.csv), not by the reference column's.")
    return lines


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
    sources = sorted({row['reference'] for row in rows},
                     key=list(reference_scores.SOURCES).index)
    cited = '; '.join(f'{source}: {reference_scores.SOURCES[source]}'
                      for source in sources or [reference_scores.MNIH_2015])
    lines += ['', f'Human-normalized score over the {count} evaluated game(s): median '
              f'{_cell(median)}, mean {_cell(mean)} (100 = human, 0 = random; random and human '
              f'scores by the reference column, {cited}). Evaluation of the final policy: '
              f'{protocol}.', '']
    lines += [line for estimate in _estimate_lines(rows) for line in (estimate, '')]
    cited = reference_scores.external_protocols([(row['game'], row['env_steps']) for row in rows])
    if cited:
        lines += ["others_at_steps: other code bases' published scores at the same env steps "
                  '(common/tools/external_scores.csv names where each was read): '
                  + '; '.join(f'{name}: {protocol}' for name, protocol in cited.items()) + '.',
                  '']
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
        for name, estimate, _ in estimates(rows):
            writer.writerow({'game': f'{name}_estimate', 'normalized': estimate})
    return md_path, csv_path
