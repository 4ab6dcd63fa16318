"""The fast tier: `python -m pytest -q -n 2 -m "not slow" tests`, the README's line for
contributors, runs the unit tests in minutes; learning, end-to-end Atari and multi-process tests
carry `@pytest.mark.slow` and still run in CI and the README's full test command. Which tests are
slow comes from a measured full suite (tests/durations.json, written by tests/record_durations.py
from a --durations=0 log): every test recorded over BUDGET_SECONDS must carry the mark
(tests/mark_slow.py adds it), and the tests left in the fast tier must fit its budget."""
import ast
import configparser
import json
import os

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
DURATIONS_FILE = os.path.join(TESTS, 'durations.json')
# A test whose recorded setup, call and teardown take longer is slow.
BUDGET_SECONDS = 4.0
# The fast tier on 2 workers, what the README promises: under 4 minutes.
FAST_TIER_SECONDS = 240.0
FAST_TIER_COMMAND = 'python -m pytest -q -n 2 -m "not slow" tests'


def recorded_durations():
    with open(DURATIONS_FILE) as f:
        return json.load(f)


def _is_slow_mark(node):
    """Whether an expression is pytest.mark.slow (or a list or tuple holding it)."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(_is_slow_mark(element) for element in node.elts)
    return (isinstance(node, ast.Attribute) and node.attr == 'slow'
            and isinstance(node.value, ast.Attribute) and node.value.attr == 'mark')


def has_slow_mark(path, name, class_name=None):
    """Whether test function name (in class_name, if given) of the module at path carries the
    slow mark: on itself, on its class, or on the module (pytestmark)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    scopes = [tree.body]
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == 'pytestmark'
                for target in node.targets) and _is_slow_mark(node.value):
            return True
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            if any(_is_slow_mark(decorator) for decorator in node.decorator_list):
                return True
            scopes.append(node.body)
    body = scopes[-1] if class_name else scopes[0]
    for node in body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return any(_is_slow_mark(decorator) for decorator in node.decorator_list)
    return False


def _parts(node_id):
    """(path, function, class or None) of a pytest node id 'path::[Class::]test[param]'."""
    parts = node_id.split('[', 1)[0].split('::')
    return parts[0], parts[-1], parts[1] if len(parts) == 3 else None


def unmarked_slow_tests(durations=None):
    """(path, function) of each test recorded over BUDGET_SECONDS, in a file that still holds
    it, without the slow mark; sorted, each once."""
    durations = recorded_durations()['tests'] if durations is None else durations
    found = set()
    for node_id, seconds in durations.items():
        path, name, class_name = _parts(node_id)
        full = os.path.join(ROOT, path)
        if seconds > BUDGET_SECONDS and os.path.isfile(full) and not has_slow_mark(
                full, name, class_name):
            found.add((path, name))
    return sorted(found)


def test_every_test_recorded_over_the_budget_is_marked_slow():
    assert unmarked_slow_tests() == [], 'run python tests/mark_slow.py'


def test_the_record_is_of_a_whole_suite_and_the_fast_tier_fits_its_budget():
    record = recorded_durations()
    assert record['machine'] and record['measured'] and '--durations=0' in record['command']
    tests = record['tests']
    assert len(tests) > 1000  # the whole suite, not a file of it
    fast = 0.0
    for node_id, seconds in tests.items():
        path, name, class_name = _parts(node_id)
        full = os.path.join(ROOT, path)
        if os.path.isfile(full) and not has_slow_mark(full, name, class_name):
            fast += seconds
    assert fast / 2 < FAST_TIER_SECONDS, f'the fast tier records {fast:.0f} s on 2 workers'


def test_the_mark_is_registered_and_the_readme_gives_the_fast_tier(tmp_path):
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, 'pytest.ini'))
    assert any(line.startswith('slow:') for line in config['pytest']['markers'].splitlines())
    with open(os.path.join(ROOT, 'README.md')) as f:
        assert FAST_TIER_COMMAND in f.read()


def test_the_checker_sees_a_mark_on_the_function_its_class_or_its_module(tmp_path):
    module = tmp_path / 'test_probe.py'
    module.write_text(
        'import pytest\n\n'
        '@pytest.mark.slow\n@pytest.mark.parametrize("x", [1])\ndef test_marked(x):\n    pass\n\n'
        'def test_plain():\n    pass\n\n'
        '@pytest.mark.slow\nclass TestGroup:\n    def test_inside(self):\n        pass\n')
    assert has_slow_mark(str(module), 'test_marked')
    assert not has_slow_mark(str(module), 'test_plain')
    assert has_slow_mark(str(module), 'test_inside', 'TestGroup')
    (tmp_path / 'test_module.py').write_text(
        'import pytest\npytestmark = [pytest.mark.gpu, pytest.mark.slow]\n\n'
        'def test_any():\n    pass\n')
    assert has_slow_mark(str(tmp_path / 'test_module.py'), 'test_any')
    durations = {f'{os.path.relpath(module, ROOT)}::test_plain': BUDGET_SECONDS + 1,
                 f'{os.path.relpath(module, ROOT)}::test_marked[1]': BUDGET_SECONDS + 1}
    assert unmarked_slow_tests(durations) == [(os.path.relpath(module, ROOT), 'test_plain')]


@pytest.mark.parametrize('node_id, parts', [
    ('tests/a.py::test_x', ('tests/a.py', 'test_x', None)),
    ('tests/a.py::test_x[paac-1]', ('tests/a.py', 'test_x', None)),
    ('tests/a.py::TestY::test_z[p::q]', ('tests/a.py', 'test_z', 'TestY')),
])
def test_node_ids_name_their_file_function_and_class(node_id, parts):
    assert _parts(node_id) == parts
