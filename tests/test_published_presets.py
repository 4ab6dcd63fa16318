"""Every run in docs/results/ names, in its preset.json, a repository preset bound only to the
game and the seed that configures with today's code exactly what the run trained with; every
preset kept for a published run (gin/published/) is named by one."""
import glob
import json
import os

import pytest

from common.launch import app
from common.tools import reproduce

RESULTS = os.path.join(app.PROJECT_ROOT, 'docs', 'results')
RUNS = sorted(path for path in glob.glob(os.path.join(RESULTS, '*'))
              if os.path.isfile(os.path.join(path, 'metrics.csv')))


@pytest.mark.parametrize('run_dir', RUNS, ids=os.path.basename)
def test_a_published_run_is_reproduced_by_the_preset_it_names(run_dir):
    assert os.path.isfile(os.path.join(run_dir, reproduce.PRESET_FILE))
    gin_files, gin_bindings = reproduce.published_preset(run_dir)
    assert reproduce.preset_problems(gin_files, gin_bindings) == []
    assert reproduce.differences(run_dir, gin_files, gin_bindings) == []
    with open(os.path.join(run_dir, reproduce.PRESET_FILE)) as f:
        started_as = json.load(f)['started_as']
    invocation = app.read_invocation(run_dir)
    assert started_as == {key: invocation[key] for key in ('gin_files', 'gin_bindings')}


def test_every_kept_preset_is_named_by_a_published_run():
    named = {name for run_dir in RUNS for name in reproduce.published_preset(run_dir)[0]}
    for path in glob.glob(os.path.join(app.PROJECT_ROOT, 'gin', 'published', '*.gin')):
        kept = os.path.relpath(path, app.PROJECT_ROOT)
        included = any(f"include '{kept}'" in open(os.path.join(app.PROJECT_ROOT, other)).read()
                       for other in named)
        assert kept in named or included, f'{kept} reproduces no published run'
