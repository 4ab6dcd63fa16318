"""Marks `@pytest.mark.slow` on every test function that tests/durations.json records over the
fast tier's budget (tests/test_tiers.py BUDGET_SECONDS) and that lacks the mark:

    python tests/mark_slow.py

Run it after tests/record_durations.py; tests/test_tiers.py fails until every such test has it.
"""
import ast
import os
import re
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
sys.path.insert(0, TESTS)
import test_tiers  # noqa: E402  pylint: disable=wrong-import-position

FIRST_PARTY = re.compile(r'^(from|import) (common|accel_tf|dqn_tf|paac_tf|ga3c_tf)\b')


def _insert_marks(path, names):
    """Inserts '@pytest.mark.slow' above the decorators of each function in names (at module
    level) of the file at path, and `import pytest` where the module lacks it; returns the
    functions marked."""
    with open(path) as f:
        text = f.read()
    tree = ast.parse(text, path)
    lines = text.split('\n')
    marked = []
    for node in sorted((node for node in tree.body if isinstance(node, ast.FunctionDef)
                        and node.name in names), key=lambda node: -node.lineno):
        first = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
        indent = lines[first - 1][:len(lines[first - 1]) - len(lines[first - 1].lstrip())]
        lines.insert(first - 1, f'{indent}@pytest.mark.slow')
        marked.append(node.name)
    if marked and not any(isinstance(node, ast.Import) and any(
            alias.name == 'pytest' for alias in node.names) for node in tree.body):
        _insert_pytest_import(lines)
    with open(path, 'w') as f:
        f.write('\n'.join(lines))
    return marked


def _insert_pytest_import(lines):
    """`import pytest` among the third-party imports (sorted), or as their group of one before
    the project's own imports."""
    first_party = next(index for index, line in enumerate(lines)
                       if FIRST_PARTY.match(line))
    end = first_party - 1  # the blank line before the project's imports
    start = end
    while start > 0 and lines[start - 1].startswith(('import ', 'from ')):
        start -= 1
    group = lines[start:end]
    if group and not all(line.split()[1].split('.')[0] in sys.stdlib_module_names
                         for line in group):
        lines[start:end] = sorted(group + ['import pytest'],
                                  key=lambda line: line.split()[1].lower())
    else:
        lines[first_party:first_party] = ['import pytest', '']


def main():
    unmarked = test_tiers.unmarked_slow_tests()
    by_file = {}
    for path, name in unmarked:
        by_file.setdefault(path, set()).add(name)
    for path, names in sorted(by_file.items()):
        for name in _insert_marks(os.path.join(ROOT, path), names):
            print(f'marked {path}::{name}')
    print(f'{len(unmarked)} tests marked slow')


if __name__ == '__main__':
    main()
