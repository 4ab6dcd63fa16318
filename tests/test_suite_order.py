"""The suite's longest tests start first (tests/conftest.py LONGEST_FIRST): every prefix there
names a test function of its file, so a renamed or moved test cannot silently drop out of the
order and end the suite with one worker idle beside a long test."""
import ast
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def _longest_first():
    tree = ast.parse(open(os.path.join(HERE, 'conftest.py')).read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [target.id for target in node.targets] == [
                'LONGEST_FIRST']:
            return ast.literal_eval(node.value)
    raise AssertionError('tests/conftest.py has no LONGEST_FIRST')


def test_every_longest_first_prefix_names_a_test_of_its_file():
    prefixes = _longest_first()
    assert len(set(prefixes)) == len(prefixes) > 0
    for prefix in prefixes:
        path, name = prefix.split('::')
        assert path.startswith('tests/'), prefix
        source = open(os.path.join(os.path.dirname(HERE), path)).read()
        function = re.escape(name.split('[')[0])
        assert re.search(rf'^def {function}\w*\(', source, re.MULTILINE), prefix
