"""The import rules of the tree: common/ imports no paper package, no paper package imports
another, the folders of common/ stand in floors whose imports point down, and what worker
processes import stays free of TensorFlow."""
import ast
import glob
import os
import subprocess
import sys

import pytest

from common.launch import app
from common.launch import registry

ROOT = app.PROJECT_ROOT
PAPER_PACKAGES = [f'{paper}{registry.SUFFIX}' for paper in registry.papers()]


def _imported_packages(path):
    """The top-level package of every import statement in a module (relative ones resolved)."""
    tree = ast.parse(open(path).read(), path)
    package = os.path.relpath(os.path.dirname(path), ROOT).split(os.sep)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split('.')[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add(package if node.level else node.module.split('.')[0])
    return found


def _modules(package):
    return sorted(glob.glob(os.path.join(ROOT, package, '**', '*.py'), recursive=True))


def test_the_registry_finds_every_paper_package():
    assert {'paac_tf', 'dqn_tf', 'ga3c_tf'} <= set(PAPER_PACKAGES)
    assert os.path.isfile(os.path.join(ROOT, 'paac_tf', 'bench_rows.py'))


def test_common_imports_no_paper_package():
    offenders = {os.path.relpath(path, ROOT): sorted(_imported_packages(path) & set(PAPER_PACKAGES))
                 for path in _modules('common')}
    assert {path: found for path, found in offenders.items() if found} == {}


@pytest.mark.parametrize('package', PAPER_PACKAGES)
def test_a_paper_package_imports_no_other_paper(package):
    others = set(PAPER_PACKAGES) - {package}
    offenders = {os.path.relpath(path, ROOT): sorted(_imported_packages(path) & others)
                 for path in _modules(package)}
    assert {path: found for path, found in offenders.items() if found} == {}


def test_the_checker_sees_both_kinds_of_import(tmp_path):
    module = tmp_path / 'probe.py'
    module.write_text('import paac_tf.main\nfrom dqn_tf import dqn\nfrom . import sibling\n')
    found = _imported_packages(str(module))
    assert {'paac_tf', 'dqn_tf'} <= found


@pytest.mark.parametrize('module', ['common.envs', 'common.system.processes', 'ga3c_tf.ipc',
                                    'common.system.field_types', 'common.replay.prioritized',
                                    'ga3c_tf.agent'])
def test_what_workers_import_stays_free_of_tensorflow(module):
    code = f'import sys, {module}; print("tensorflow" in sys.modules)'
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert result.stdout.strip() == 'False', result.stderr[-2000:]


def _module_name(path):
    name = os.path.relpath(path, ROOT)[:-len('.py')].replace(os.sep, '.')
    return name[:-len('.__init__')] if name.endswith('.__init__') else name


def _imported_modules(path, known):
    """The modules of the tree (known) that a module imports anywhere in it, function-level
    imports included: `from a.b import c` counts a.b.c if that is a module, else a.b."""
    tree = ast.parse(open(path).read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f'{node.module}.{alias.name}'
                found.add(full if full in known else node.module)
    return found & known


def test_no_module_imports_itself_through_others():
    """The tree's imports (function-level ones too) form no circle: each module can be read,
    and moved, standing on what it imports."""
    paths = {_module_name(path): path
             for package in ['common'] + PAPER_PACKAGES for path in _modules(package)}
    edges = {name: _imported_modules(path, set(paths)) - {name} for name, path in paths.items()}
    state, circles = {}, []

    def visit(name, trail):
        state[name] = 'open'
        for other in sorted(edges[name]):
            if state.get(other) == 'open':
                circles.append(trail[trail.index(other):] + [other])
            elif other not in state:
                visit(other, trail + [other])
        state[name] = 'done'

    for name in sorted(paths):
        if name not in state:
            visit(name, [name])
    assert circles == [], '; '.join(' -> '.join(circle) for circle in circles)


def _folders(path):
    return {name for name in os.listdir(path) if os.path.isdir(os.path.join(path, name))
            and not name.startswith(('_', '.'))}


def test_the_tests_of_common_stand_in_its_role_folders():
    """tests/common/<folder>/ holds the tests of common/<folder>/; tests/common/ itself only
    those of common's top-level commands (bench, compare, results, ...)."""
    tests = os.path.join(ROOT, 'tests', 'common')
    assert _folders(tests) == _folders(os.path.join(ROOT, 'common'))
    for folder in _folders(tests):
        modules = {os.path.basename(path)[:-3]
                   for path in glob.glob(os.path.join(ROOT, 'common', folder, '*.py'))}
        misplaced = [path for path in glob.glob(os.path.join(tests, 'test_*.py'))
                     if os.path.basename(path)[len('test_'):-3] in modules]
        assert not misplaced, f'tests of common/{folder}/ outside tests/common/{folder}/: ' \
                              f'{misplaced}'


# The floors of common/, top first: a module imports only from its own folder and the floors
# below; folders on one floor do not import each other. common/*.py (the commands) stand above
# them all. docs/code_map.md draws the same order.
FLOORS = (('tools',), ('launch',), ('units',), ('learners',), ('run', 'scale', 'replay', 'envs'),
          ('system',))


def _floor_of(module):
    """The floor index of a common.<folder>... module name; None for a top-level command."""
    parts = module.split('.')
    if len(parts) == 1 or not os.path.isdir(os.path.join(ROOT, *parts[:2])):
        return None
    for index, floor in enumerate(FLOORS):
        if parts[1] in floor:
            return index
    raise AssertionError(f'common/{parts[1]}/ stands on no floor: add it to FLOORS')


def _upward_imports(paths):
    """'importer -> imported' for every import in paths (module -> file) that does not point to
    a lower floor (or within its own folder)."""
    known = set(paths)
    found = []
    for name, path in sorted(paths.items()):
        floor = _floor_of(name)
        if floor is None:
            continue
        for other in sorted(_imported_modules(path, known)):
            other_floor = _floor_of(other)
            if other.split('.')[:2] == name.split('.')[:2]:
                continue
            if other_floor is None or other_floor <= floor:
                found.append(f'{name} -> {other}')
    return found


def test_every_folder_of_common_stands_on_a_floor():
    placed = {folder for floor in FLOORS for folder in floor}
    assert _folders(os.path.join(ROOT, 'common')) - {'__pycache__'} == placed


def test_the_folders_of_common_import_only_down():
    paths = {_module_name(path): path for path in _modules('common')}
    assert _upward_imports(paths) == []


def test_the_floor_check_sees_an_import_that_climbs(tmp_path):
    low = tmp_path / 'low.py'
    low.write_text('from common.launch import app\nfrom common.system import errors\n')
    peer = tmp_path / 'peer.py'
    peer.write_text('from common.replay import replay\n')
    paths = {'common.run.probe': str(low), 'common.envs.probe': str(peer),
             'common.launch.app': str(low), 'common.system.errors': str(low),
             'common.replay.replay': str(low)}
    found = _upward_imports(paths)
    assert 'common.run.probe -> common.launch.app' in found
    assert 'common.envs.probe -> common.replay.replay' in found
    assert not any(line.startswith('common.launch.app -> common.run') for line in found)
