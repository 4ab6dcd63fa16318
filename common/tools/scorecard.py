"""The Atari-5 scorecard of the published runs: per preset (the repository gin file a run was
started from, with its game bound) and per game of Atari-5 (Aitchison, Sweetser & Hutter 2023:
Battle Zone, Double Dunk, Name This Game, Phoenix, Q*Bert), the final policy's evaluation mean
and its human-normalized score; per preset the median normalized score and, once it has all
five, the Atari-5 estimate of the 57-game median; beside them the papers' own scores and other
code bases' published scores at the same env steps. common.results writes it into
docs/results.md."""
import json
import math
import os
import re
import statistics

from common.launch import app
from common.tools import atari5
from common.tools import reference_scores
from common.tools import reproduce
from common.tools import run_files

GAMES = tuple(atari5.SUBSETS['atari5'].weights)
TITLES = {'battle_zone': 'Battle Zone', 'double_dunk': 'Double Dunk',
          'name_this_game': 'Name This Game', 'phoenix': 'Phoenix', 'qbert': 'Q*bert'}
# The README's reference row: CleanRL's PPO (envpool, no sticky actions) at 10M steps, the one
# code base with all five games at a budget the presets run to (external_scores.csv).
GLANCE_REFERENCE = ('cleanrl', 'ppo_atari_envpool_xla_jax', 10_000_000)
START = '<!-- Atari-5 scorecard: written by python -m common.results, do not edit -->'
END = '<!-- end of Atari-5 scorecard -->'


# Bindings that leave a run its preset's: the game and the seed.
_OWN_BINDING = re.compile(r"^\s*(AtariConfig\.game|[A-Za-z_][\w.]*\.seed)\s*=")


def preset_of(run_dir):
    """The preset file the run was started from with only its game and seed bound: preset.json's
    started_as (the command that began it), else preset.json's own record, else
    invocation.json's; None when none is recorded or the command bound anything else (a sweep
    point is not its preset's)."""
    for name, key in ((reproduce.PRESET_FILE, 'started_as'), (reproduce.PRESET_FILE, None),
                      (app.INVOCATION_FILE, None)):
        try:
            with open(os.path.join(run_dir, name)) as f:
                record = json.load(f)
        except (OSError, ValueError):
            continue
        record = record.get(key) if key and isinstance(record, dict) else record
        if not isinstance(record, dict) or not record.get('gin_files'):
            continue
        if len(record['gin_files']) != 1 or not all(
                _OWN_BINDING.match(binding) for binding in record.get('gin_bindings') or ()):
            return None
        return record['gin_files'][0]
    return None


def final_evaluation(run_dir):
    """eval.csv's row at the run's last evaluated step (the last such row: the suite's final
    evaluation follows any in-run round at that step), rows a resume superseded left out; None
    when the run has no evaluation."""
    from common.run import superseded  # pylint: disable=import-outside-toplevel
    rows = superseded.read_history(os.path.join(run_dir, 'eval.csv'))
    rows = [row for row in rows if not math.isnan(run_files.number(row.get('score_mean')))
            and not math.isnan(run_files.number(row.get('env_steps')))]
    if not rows:
        return None
    last = max(run_files.number(row['env_steps']) for row in rows)
    return [row for row in rows if run_files.number(row['env_steps']) == last][-1]


def cells(run_dirs):
    """{preset: {game: cell}} over the runs on Atari-5 games with an evaluation; a cell is a dict
    (run, paper, score, episodes, env_steps, normalized). Of two runs of one preset on one game
    (seeds) the one evaluated at more steps counts, then the later in run_dirs."""
    table = {}
    for run_dir in run_dirs:
        game, preset = run_files.read_game(run_dir), preset_of(run_dir)
        evaluation = final_evaluation(run_dir) if game in GAMES and preset else None
        if evaluation is None:
            continue
        score, steps = float(evaluation['score_mean']), int(float(evaluation['env_steps']))
        cell = {'run': os.path.basename(os.path.normpath(run_dir)),
                'paper': run_files.read_paper(run_dir), 'score': score,
                'episodes': int(float(evaluation['episodes'] or 0)), 'env_steps': steps,
                'normalized': normalized(score, game)}
        held = table.setdefault(preset, {}).get(game)
        if held is None or held['env_steps'] <= steps:
            table[preset][game] = cell
    return dict(sorted(table.items()))


def normalized(score, game):
    """100 x (score - random) / (human - random) by the suite table's random and human scores
    (reference_scores.random_human_and_source: Mnih et al. 2015's, Badia et al. 2020's for
    Phoenix)."""
    random, human, _ = reference_scores.random_human_and_source(game)
    return 100.0 * (score - random) / (human - random)


def preset_summary(by_game):
    """(median normalized score, Atari-5 estimate or nan) of one preset's cells."""
    values = [cell['normalized'] for cell in by_game.values()]
    median = statistics.median(values) if values else math.nan
    scores = {game: cell['score'] for game, cell in by_game.items()}
    estimate = atari5.atari5_estimate(scores) if set(GAMES) <= set(scores) else math.nan
    return median, estimate


def _steps_text(steps):
    return f'{steps / 1e6:.3g}M'  # a batch past the budget: 3.00032M reads 3M


def _cell_text(cell, link_prefix):
    return (f"[{cell['score']:.1f}]({link_prefix}{cell['run']}/) ({cell['normalized']:.1f}%, "
            f"{_steps_text(cell['env_steps'])})")


def reference_rows(by_preset):
    """Per Atari-5 game a preset ran: (game, the papers' own scores of it (each preset's paper),
    other code bases' scores at each env steps the presets ran it to), '-' where there is none."""
    rows = []
    for game in GAMES:
        ran = [cells_[game] for cells_ in by_preset.values() if game in cells_]
        if not ran:
            continue
        papers = [f'{paper}: {text}' for paper in sorted({cell['paper'] for cell in ran})
                  for text in [reference_scores.paper_score_text(paper, game)] if text]
        others = [f'at {_steps_text(steps)}: {text}'
                  for steps in sorted({cell['env_steps'] for cell in ran})
                  for text in [reference_scores.external_score_text(game, steps)] if text]
        rows.append((game, '; '.join(papers) or '-', '; '.join(others) or '-'))
    return rows


def markdown_block(run_dirs, link_prefix='results/'):
    """The scorecard's lines (without markers) for the published runs run_dirs; link_prefix
    leads from the file it is written into to the published folders."""
    by_preset = cells(run_dirs)
    lines = ["Each preset's final policy on each Atari-5 game: its evaluation mean (its paper's "
             'protocol, `common/envs/eval_protocols.py`; linked to the published run), the '
             'human-normalized score 100 x (score - random) / (human - random) and the env steps '
             'trained. Atari-5 (Aitchison, Sweetser & Hutter 2023) estimates the 57-game median '
             'human-normalized score from these five games within about 10%; it normalizes by '
             "the random and human scores its regression was fit on (maitchison/Atari-5's "
             'Atari-Human.csv), the cells by the random and human columns here.', '']
    if not by_preset:
        return lines + ['No preset has a published evaluation on an Atari-5 game yet.']
    presets = list(by_preset)
    header = ['game', 'random', 'human', 'reference'] + [f'`{preset}`' for preset in presets]
    lines += ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    for game in GAMES:
        random, human, source = reference_scores.random_human_and_source(game)
        row = [game, f'{random:g}', f'{human:g}', source]
        row += [_cell_text(by_preset[preset][game], link_prefix) if game in by_preset[preset]
                else '-' for preset in presets]
        lines.append('| ' + ' | '.join(row) + ' |')
    summaries = [preset_summary(by_preset[preset]) for preset in presets]
    for label, index in (('median normalized', 0), ('Atari-5 estimate', 1)):
        row = [f'**{label}**', '', '', ''] + [
            '-' if math.isnan(summary[index]) else
            f'{summary[index]:.1f}%' + (f' ({len(by_preset[preset])} of 5)' if index == 0
                                        else '')
            for preset, summary in zip(presets, summaries)]
        lines.append('| ' + ' | '.join(row) + ' |')
    cited = '; '.join(f'{source}: {text}' for source, text in reference_scores.SOURCES.items())
    lines += ['', f'Random and human scores by the reference column: {cited}.', '',
              "The papers' own scores (their budgets and protocols in each paper's doc) and other "
              "code bases' published scores at the env steps the presets ran each game to "
              '(`common/tools/external_scores.csv` names where each was read and its protocol):',
              '', '| game | papers | others at the same env steps |', '|---|---|---|']
    return lines + [f'| {game} | {papers} | {others} |'
                    for game, papers, others in reference_rows(by_preset)]


def _glance_cell(score, normalized_score):
    digits = 1 if abs(score) < 100 else 0
    return f'{score:,.{digits}f} ({normalized_score:.1f}%)'


def glance_lines(run_dirs):
    """The README's table of the scorecard: a row per preset (its steps), a column per game, each
    cell the final policy's evaluation and its human-normalized %, the Atari-5 estimate once a
    preset has all five; last, CleanRL's PPO at 10M steps (its training returns)."""
    header = ['final policy (% of human)'] + [TITLES[game] for game in GAMES] + ['Atari-5']
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    for preset, by_game in cells(run_dirs).items():
        steps = '/'.join(_steps_text(steps) for steps in sorted(
            {cell['env_steps'] for cell in by_game.values()}))
        estimate = preset_summary(by_game)[1]
        row = [f'`{preset}`, {steps}'] + [
            _glance_cell(by_game[game]['score'], by_game[game]['normalized'])
            if game in by_game else '-' for game in GAMES]
        lines.append('| ' + ' | '.join(row + ['-' if math.isnan(estimate)
                                              else f'{estimate:.1f}%']) + ' |')
    source, algorithm, env_steps = GLANCE_REFERENCE
    scores = {game: row['score'] for game in GAMES for row in reference_scores.external_scores(game)
              if (row['source'], row['algorithm'], row['env_steps']) == GLANCE_REFERENCE}
    row = [f'CleanRL PPO, {_steps_text(env_steps)} (training)'] + [
        _glance_cell(scores[game], normalized(scores[game], game)) if game in scores else '-'
        for game in GAMES]
    estimate = atari5.atari5_estimate(scores) if len(scores) == len(GAMES) else math.nan
    lines.append('| ' + ' | '.join(row + ['-' if math.isnan(estimate) else f'{estimate:.1f}%'])
                 + ' |')
    return lines
