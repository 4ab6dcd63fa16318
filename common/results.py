"""`python -m common.results RUN_DIR NAME [--results_dir docs/results]`: publish a run's curves
and its final policy.

Copies what common.compare reads (invocation.json, run.json, operative_config.gin, metrics.csv,
episodes.csv, eval.csv; no checkpoints) into RESULTS_DIR/NAME, with preset.json naming the
repository preset that reproduces the run with today's code (its own command, or --preset), with the policy of the run's
newest checkpoint as policy_weights.* (the network's weights and the run's counters; no
optimizer, no replay), which common.evaluate, common.watch and common.export read from there;
draws that run's figures there, and redraws the figures of every published run in RESULTS_DIR,
one set per game (score_vs_hours-pong.png, score_vs_hours-breakout.png, ...: scores of different
games are on different scales), a panel per paper in each, so the README's figure stays current
as papers and algorithms are added; it rewrites the time-to-score tables of RESULTS_DIR.md, one
per game, and its Atari-5 scorecard (common/tools/scorecard.py). An existing NAME is refused
unless --replace (which names the run it replaces).
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import os
import shutil
import sys
import tempfile

from absl import flags

from common import compare
from common.launch import app
from common.run import published as published_lib
from common.system import checks
from common.system import errors
from common.tools import reference_scores
from common.tools import reproduce
from common.tools import run_files
from common.tools import scorecard

RUN_FILES = (app.INVOCATION_FILE, app.RUN_FILE, app.OPERATIVE_CONFIG_FILE, 'metrics.csv',
             'episodes.csv', 'eval.csv')
DEFAULT_RESULTS_DIR = os.path.join('docs', 'results')
NO_POLICY_FILE = published_lib.NO_POLICY_FILE

flags.DEFINE_string('results_dir', DEFAULT_RESULTS_DIR, 'Where published runs live.')
flags.DEFINE_string('preset', None, 'The repository gin file that reproduces the run with '
                    "today's code when its own command does not (bindings beyond the game and the "
                    'seed, a preset changed since): recorded in NAME/preset.json once checked.')
flags.DEFINE_boolean('replace', False, 'Replace the published run NAME already holds (named in '
                     'the line that says so); without it an existing NAME is refused.')
flags.DEFINE_boolean('without_policy', False, 'Publish a run that has no checkpoint to take '
                     f'its policy from (its curves alone), marked so by {NO_POLICY_FILE}.')


def publish(run_dir, name, results_dir=DEFAULT_RESULTS_DIR, without_policy=False, preset=None,
            replace=False):
    """Copies run_dir's run files to results_dir/name, names the repository preset that
    reproduces it (reproduce.record_preset: preset, else the run's command) and redraws the
    figures; returns the paths written. ConfigError, before anything is written, for a run still
    training (its files are half written), unless without_policy for one with no checkpoint,
    and unless replace for a name that already holds a published run. The folder is written
    beside its place and then moved there, so a publication that fails leaves the old one."""
    run_files.read_paper(run_dir)  # a run directory, readable, or ConfigError
    if not os.path.isfile(os.path.join(run_dir, 'metrics.csv')):
        raise errors.ConfigError(f'{run_dir!r} has no metrics.csv yet: nothing to publish')
    checks.require(name and os.sep not in name and not name.startswith('.'),
                   f'NAME={name!r} must be a plain directory name, e.g. paac-pong')
    from common.run import run_lock  # pylint: disable=import-outside-toplevel
    holder = run_lock.live_holder(run_dir)
    checks.require(holder is None, f'{run_dir} is still training ({holder}): publish it once that '
                   'run has stopped (its files are half written until then)')
    no_policy = _no_policy_reason(run_dir)
    checks.require(no_policy is None or without_policy,
                   f'{run_dir} has no checkpoint to take a policy from ({no_policy}); '
                   '--without_policy publishes its curves alone, marked so')
    record, problems = reproduce.preset_record(run_dir, preset)
    checks.require(record is not None or preset is None,
                   f'--preset={preset!r} does not reproduce {run_dir}: {"; ".join(problems)}')
    target = os.path.join(results_dir, name)
    checks.require(not os.path.exists(target) or os.path.isdir(target),
                   f'{target} is a file, not a published run')
    held = os.path.isdir(target) and bool(os.listdir(target))
    checks.require(not held or replace,
                   f'{target} already holds a published run ({_published_as(target)}); '
                   f'--replace replaces it (git history keeps the old one), or give another NAME')
    if held:
        print(f'replacing {target} ({_published_as(target)})')
    os.makedirs(results_dir, exist_ok=True)
    # Written as <hidden folder>/NAME (figures are labelled by the folder's name), then moved.
    beside = tempfile.mkdtemp(prefix='.publishing-', dir=results_dir)
    staging = os.path.join(beside, name)
    try:
        os.mkdir(staging)
        written = _write_published(run_dir, staging, name, record, problems, no_policy)
        if os.path.isdir(target):
            os.replace(target, os.path.join(beside, 'replaced'))
        os.replace(staging, target)
    finally:
        shutil.rmtree(beside, ignore_errors=True)
    written = [os.path.join(target, os.path.relpath(path, staging)) for path in written]
    from common.tools import plots  # pylint: disable=import-outside-toplevel  (matplotlib)
    published = sorted(os.path.join(results_dir, entry) for entry in os.listdir(results_dir)
                       if os.path.isfile(os.path.join(results_dir, entry, 'metrics.csv')))
    written += plot_all_runs(published, results_dir)
    for file_name, *_ in plots.FIGURES:  # the all-games figures from before games were split
        if os.path.isfile(os.path.join(results_dir, file_name)):
            os.remove(os.path.join(results_dir, file_name))
    written.append(write_summary(published, results_dir))
    write_scorecard(published, results_dir)  # into the same file
    return written


def _published_as(target):
    """A published folder in a few words: its paper, game and last step, for the line that
    names it."""
    try:
        paper, game = run_files.read_paper(target), run_files.read_game(target)
        rows = run_files.read_csv(os.path.join(target, 'metrics.csv'))
        return f'{paper} on {game}, {int(float(rows[-1]["env_steps"])):,} steps'
    except (errors.ConfigError, OSError, ValueError, KeyError, IndexError):
        return 'its files are not a readable run'


def _write_published(run_dir, target, name, record, problems, no_policy):
    """Writes the published folder's files into target (empty); returns the paths written."""
    written = []
    for file_name in RUN_FILES:
        source = os.path.join(run_dir, file_name)
        if os.path.isfile(source):
            shutil.copyfile(source, os.path.join(target, file_name))
            written.append(os.path.join(target, file_name))
    if record is None:
        print(f'warning: {name} names no repository preset that reproduces it '
              f'({"; ".join(problems)}); docs/results/ holds only runs that do: give the preset '
              'that does with --preset (gin/published/NAME.gin for an older preset state)',
              file=sys.stderr)
    else:
        written.append(reproduce.write_preset(record, target))
    if no_policy is None:
        written += publish_policy(run_dir, target)
    else:
        marker = os.path.join(target, NO_POLICY_FILE)
        with open(marker, 'w') as f:
            f.write(f'Published with --without_policy: {no_policy}\n')
        written.append(marker)
    from common.tools import plots  # pylint: disable=import-outside-toplevel  (matplotlib)
    written += plots.plot_runs([plots.load_run(target, run_files.run_label(target))], target,
                               title=f'{run_files.read_game(target)}: {name}')
    return written


def plot_all_runs(published, results_dir):
    """Draws the all-runs figures of results_dir, one set per game (score_vs_hours-pong.png,
    ...), a panel per paper in each (plots.draw_by_paper: one legend of 34 runs would not fit
    a figure); returns the paths written."""
    from common.tools import plots  # pylint: disable=import-outside-toplevel  (matplotlib)
    written = []
    for game, paths in compare.group_by_game(published).items():
        written += plots.plot_by_paper(plots.load_by_paper(paths), results_dir,
                                       title=f'{game}: every published run',
                                       suffix=plots.file_suffix(game))
    return written


def _no_policy_reason(run_dir):
    """Why run_dir has no policy to publish (no readable checkpoint, no published weights), or
    None when it has one."""
    from common.run import checkpoint as checkpoint_lib  # pylint: disable=import-outside-toplevel
    try:
        checkpoint_lib.policy_source(run_dir)
    except checkpoint_lib.CheckpointError as error:
        return str(error)
    return None


def publish_policy(run_dir, target):
    """Writes the policy of run_dir's newest readable checkpoint (or of its published weights)
    as target's policy weights, through its paper's loading; returns the paths written."""
    from common.run import checkpoint as checkpoint_lib  # pylint: disable=import-outside-toplevel
    source, _ = checkpoint_lib.policy_source(run_dir)
    from common import evaluate  # pylint: disable=import-outside-toplevel  (TensorFlow)
    _, policy, _ = evaluate.load_policy(run_dir, greedy=True)
    return checkpoint_lib.write_policy_weights(target, policy.network, source)


TABLE_START = '<!-- time to score: written by python -m common.results, do not edit -->'
TABLE_END = '<!-- end of time to score -->'


def summary_path(results_dir):
    """docs/results.md beside docs/results/: the prose about the runs and the generated table."""
    return os.path.normpath(results_dir) + '.md'


def write_summary(published, results_dir, thresholds=reference_scores.THRESHOLDS):
    """Rewrites the time-to-score tables (every published run's env steps and hours, on the wall
    clock and the own clock of common/tools/run_clock.py, to each of its game's scores; a
    '### game' subsection per game, Pong first) between the markers in summary_path(results_dir),
    adding the section if the file has none; the rest is kept."""
    block = [
        TABLE_START,
        '',
        "Env steps, wall-clock hours and own-clock hours (the wall clock less the time the run "
        'was held or starved of CPU, `common/tools/run_clock.py`) at which the 100-episode '
        "training mean first reached each score. 'unrecorded h': hours logged before the load "
        "columns existed, where holds and starvation cannot be told. 'host steal %': the median "
        "and highest share of the machine's CPU time a virtual machine's host took per row "
        "(steal_pct; '?' for runs logged before it). The scores are per game "
        '(`THRESHOLDS` in `common/tools/reference_scores.py`); a game not there has its human '
        'score alone (Mnih et al. 2015, else Badia et al. 2020 for a game of the 57 they lack).',
        '',
    ]
    for game, paths in compare.group_by_game(published).items():
        block += [f'### {game}', '']
        scores = reference_scores.thresholds_of(game, thresholds)
        if not scores:
            block += ['No scores to time: no thresholds and no human score for this game in '
                      '`common/tools/reference_scores.py`.', '']
            continue
        table = compare.time_to_score_rows(paths, scores)
        block += ['| ' + ' | '.join(table[0]) + ' |', '|' + '---|' * len(table[0])]
        block += ['| ' + ' | '.join(row) + ' |' for row in table[1:]] + ['']
    block.append(TABLE_END)
    return _write_section(summary_path(results_dir), 'Time to score', block)


def write_scorecard(published, results_dir):
    """Rewrites the Atari-5 scorecard (common/tools/scorecard.py) of the published runs between
    its markers in summary_path(results_dir), adding the section if the file has none."""
    prefix = os.path.basename(os.path.normpath(results_dir)) + '/'
    block = [scorecard.START, ''] + scorecard.markdown_block(published, prefix) + \
        ['', scorecard.END]
    return _write_section(summary_path(results_dir), 'Atari-5 scorecard', block)


def _write_section(path, title, block):
    """Replaces the text between block's first and last line (its markers) in the file at path,
    or appends block under '## title' (the file begun as '# Published runs' when new); the rest
    of the file is kept. Returns path."""
    start, end = block[0], block[-1]
    text = ''
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    if start in text and end in text:
        before, rest = text.split(start, 1)
        after = rest.split(end, 1)[1]
        text = before + '\n'.join(block) + after
    else:
        heading = '' if text else '# Published runs\n\n'
        text = (text.rstrip('\n') + '\n\n' if text else heading) + f'## {title}\n\n' + \
            '\n'.join(block) + '\n'
    with open(path, 'w') as f:
        f.write(text)
    return path


def main(args):
    if len(args) != 2:
        app.fail('usage: python -m common.results RUN_DIR NAME [--results_dir DIR] '
                 '[--preset gin/...] [--replace]')
    for path in publish(args[0], args[1], flags.FLAGS.results_dir,
                        flags.FLAGS.without_policy, flags.FLAGS.preset, flags.FLAGS.replace):
        print(f'wrote {path}')
    return 0


if __name__ == '__main__':
    app.execute(main, takes_args=True)
