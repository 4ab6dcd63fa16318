"""What the repository holds of runs stays the size of what it is for: a run published under
docs/results/ is its records and one policy (never its checkpoints), and a run carried to another
machine under carried/ is one carry (common/run/carry.py), each under a bound that its network
explains."""
import os

import pytest

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(PROJECT_ROOT, 'docs', 'results')
CARRIED = os.path.join(PROJECT_ROOT, 'carried')

MIB = 2 ** 20
# A published run: its CSVs, figures and one policy's float32 weights. The largest,
# docs/results/accel-rainbow-pong (~29 MB), is a dueling network's two 512-unit streams on 6,912
# features (2 x 6,912 x 512 x 4 bytes = 28.3 MB); a checkpoint's optimizer slots or a second
# policy would take a run past the bound.
RESULT_LIMIT = 32 * MIB
# A carry: the Stooke & Abbeel DQN network's weights (~14.5 MB, docs/results/accel-dqn-pong), its
# target network (stored once when equal to the online one, twice at most) and two optimizer
# slots: at most four copies, 58 MB, deflated (common/run/carry.py), plus the run's records.
CARRY_LIMIT = 64 * MIB

POLICY_FILES = {'policy_weights.index', 'policy_weights.data-00000-of-00001'}
NO_POLICY_FILE = 'NO_POLICY.txt'  # common/results.py: a run published without its policy
CARRY_FILE = 'carry.json'  # common/run/carry.py's MANIFEST


def _folders(parent, holding=None):
    """The names of parent's subdirectories (those holding the file holding, if given); [] if
    there is no parent."""
    if not os.path.isdir(parent):
        return []
    return sorted(name for name in os.listdir(parent)
                  if os.path.isdir(os.path.join(parent, name))
                  and (holding is None or os.path.isfile(os.path.join(parent, name, holding))))


PUBLISHED = _folders(RESULTS, holding='metrics.csv')
CARRIES = _folders(CARRIED)


def _files(folder):
    """(path relative to folder, size in bytes) of every file under folder."""
    found = []
    for directory, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(directory, name)
            found.append((os.path.relpath(path, folder), os.path.getsize(path)))
    return sorted(found)


def _size_message(folder, size, limit):
    return (f'{os.path.relpath(folder, PROJECT_ROOT)} holds {size / MIB:.1f} MiB ({size:,} '
            f'bytes), over its {limit / MIB:.0f} MiB bound')


def test_published_runs_are_found():
    assert PUBLISHED, f'no run (a folder with a metrics.csv) under {RESULTS}'


@pytest.mark.parametrize('name', PUBLISHED)
def test_a_published_run_is_one_policy_and_no_checkpoint(name):
    folder = os.path.join(RESULTS, name)
    files = _files(folder)
    label = os.path.relpath(folder, PROJECT_ROOT)
    directories = [os.path.relpath(os.path.join(directory, sub), folder)
                   for directory, subs, _ in os.walk(folder) for sub in subs]
    assert not [d for d in directories if os.path.basename(d) == 'checkpoints'], (
        f'{label} holds a checkpoints directory: {directories}')
    checkpoints = [path for path, _ in files if os.path.basename(path).startswith('ckpt-')]
    assert not checkpoints, f'{label} holds checkpoint files: {checkpoints}'
    # A TensorFlow bundle is an .index and its .data- shards: only the one policy's may be here.
    bundles = {path for path, _ in files
               if path.endswith('.index') or '.data-' in os.path.basename(path)}
    has_marker = os.path.isfile(os.path.join(folder, NO_POLICY_FILE))
    assert bundles in (POLICY_FILES, set()) and (bundles == POLICY_FILES) != has_marker, (
        f'{label} holds {sorted(bundles) or "no policy"}'
        f'{" and " + NO_POLICY_FILE if has_marker else ""}: a published run holds one policy '
        f'({", ".join(sorted(POLICY_FILES))}) or {NO_POLICY_FILE} instead')
    size = sum(file_size for _, file_size in files)
    assert size <= RESULT_LIMIT, _size_message(folder, size, RESULT_LIMIT)


def _check_carry(name):
    folder = os.path.join(CARRIED, name)
    assert os.path.isfile(os.path.join(folder, CARRY_FILE)), (
        f'{os.path.relpath(folder, PROJECT_ROOT)} holds no {CARRY_FILE}: not a carry')
    size = sum(file_size for _, file_size in _files(folder))
    assert size <= CARRY_LIMIT, _size_message(folder, size, CARRY_LIMIT)


def test_every_carried_folder_is_a_carry_within_its_bound():
    """Every folder under carried/ (none while nothing has been carried)."""
    for name in CARRIES:
        _check_carry(name)


@pytest.mark.parametrize('name', CARRIES)
def test_a_carried_folder_is_a_carry_within_its_bound(name):
    _check_carry(name)


def test_the_readme_s_clone_weight_bounds_what_the_working_tree_holds():
    """The README says what a clone weighs: docs/results/ under 260 MB, carried/ under 64 MB."""
    with open(os.path.join(PROJECT_ROOT, 'README.md')) as f:
        readme = ' '.join(f.read().split())
    assert '`docs/results/` under 260 MB, `carried/` under 64 MB' in readme
    results = sum(size for _, size in _files(RESULTS))
    carried = sum(size for _, size in _files(CARRIED)) if os.path.isdir(CARRIED) else 0
    assert results < 260e6, f'docs/results/ holds {results / 1e6:.0f} MB: update the README'
    assert carried < 64e6, f'carried/ holds {carried / 1e6:.0f} MB: update the README'
