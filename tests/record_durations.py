"""Records each test's duration from a pytest log run with --durations=0 into tests/durations.json,
which tests/test_tiers.py reads to hold every test over the budget to the `slow` mark:

    python -m pytest -q -n 2 tests --durations=0 > suite.log; python tests/record_durations.py suite.log "MACHINE"
"""
import datetime
import json
import os
import re
import sys

DURATIONS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'durations.json')
_LINE = re.compile(r'^\s*([\d.]+)s (setup|call|teardown)\s+(\S.*?)\s*$')


def parse(text):
    """{test node id: seconds of setup, call and teardown} of a --durations=0 report."""
    seconds = {}
    for line in text.splitlines():
        found = _LINE.match(line)
        if found:
            seconds[found.group(3)] = seconds.get(found.group(3), 0.0) + float(found.group(1))
    return {node: round(value, 2) for node, value in sorted(seconds.items())}


def main(log_path, machine):
    with open(log_path) as f:
        tests = parse(f.read())
    if not tests:
        raise SystemExit(f'{log_path} holds no --durations=0 lines: run pytest with --durations=0')
    record = {'measured': datetime.date.today().isoformat(), 'machine': machine,
              'command': 'python -m pytest -q -n 2 tests --durations=0', 'tests': tests}
    with open(DURATIONS_FILE, 'w') as f:
        json.dump(record, f, indent=1)
        f.write('\n')
    print(f'wrote {len(tests)} tests\' durations to {DURATIONS_FILE}')


if __name__ == '__main__':
    if len(sys.argv) != 3:
        raise SystemExit('usage: python tests/record_durations.py SUITE_LOG "MACHINE"')
    main(sys.argv[1], sys.argv[2])
