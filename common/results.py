"""`python -m common.results RUN_DIR NAME [--results_dir docs/results]`: publish a run's curves.

Copies what common.compare reads (invocation.json, run.json, operative_config.gin, metrics.csv,
episodes.csv, eval.csv; no checkpoints) into RESULTS_DIR/NAME, draws that run's figures there,
and redraws the figures of every published run together in RESULTS_DIR, so the README's figure
stays current as papers and algorithms are added. Rerunning it with the same NAME replaces it.
"""
import os
import shutil

from absl import flags

from common import app
from common import run_files

RUN_FILES = (app.INVOCATION_FILE, app.RUN_FILE, app.OPERATIVE_CONFIG_FILE, 'metrics.csv',
             'episodes.csv', 'eval.csv')
DEFAULT_RESULTS_DIR = os.path.join('docs', 'results')

flags.DEFINE_string('results_dir', DEFAULT_RESULTS_DIR, 'Where published runs live.')


def publish(run_dir, name, results_dir=DEFAULT_RESULTS_DIR):
    """Copies run_dir's run files to results_dir/name and redraws the figures; returns the
    paths written."""
    run_files.read_paper(run_dir)  # a run directory, readable, or ConfigError
    if not os.path.isfile(os.path.join(run_dir, 'metrics.csv')):
        raise app.ConfigError(f'{run_dir!r} has no metrics.csv yet: nothing to publish')
    app.require(name and os.sep not in name and not name.startswith('.'),
                f'NAME={name!r} must be a plain directory name, e.g. paac-pong')
    target = os.path.join(results_dir, name)
    os.makedirs(target, exist_ok=True)
    written = []
    for file_name in RUN_FILES:
        source = os.path.join(run_dir, file_name)
        if os.path.isfile(source):
            shutil.copyfile(source, os.path.join(target, file_name))
            written.append(os.path.join(target, file_name))
    from common import plots  # pylint: disable=import-outside-toplevel  (matplotlib)
    written += plots.plot_runs([plots.load_run(target, run_files.run_label(target))], target)
    published = sorted(os.path.join(results_dir, entry) for entry in os.listdir(results_dir)
                       if os.path.isfile(os.path.join(results_dir, entry, 'metrics.csv')))
    runs = [plots.load_run(path, run_files.run_label(path)) for path in published]
    written += plots.plot_runs(runs, results_dir, title='every published run')
    return written


def main(args):
    if len(args) != 2:
        app.fail('usage: python -m common.results RUN_DIR NAME [--results_dir DIR]')
    for path in publish(args[0], args[1], flags.FLAGS.results_dir):
        print(f'wrote {path}')
    return 0


if __name__ == '__main__':
    app.run(main, takes_args=True)
