"""The asynchronous learners' plumbing: flat parameter vectors round-trip through a model's
variables, and a learner process that does not stop in time is ended with its unit closed (its
environment pool would otherwise be left to the orphan watchdogs)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import tensorflow as tf

from common import async_learners

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_flat_values_and_assign_flat_round_trip():
    variables = [tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3)),
                 tf.Variable(np.array([10.0], dtype=np.float32)),
                 tf.Variable(np.full((2, 2), -1.0, dtype=np.float32))]
    flat = async_learners.flat_values(variables)
    np.testing.assert_array_equal(flat, [0, 1, 2, 3, 4, 5, 10, -1, -1, -1, -1])
    async_learners.assign_flat(variables, np.arange(11, dtype=np.float32) * 2)
    np.testing.assert_array_equal(variables[0].numpy(), [[0, 2, 4], [6, 8, 10]])
    np.testing.assert_array_equal(variables[1].numpy(), [12])
    np.testing.assert_array_equal(variables[2].numpy(), [[14, 16], [18, 20]])


# Spawned learners import open_unit by name (not from __main__), so it lives in a module.
SLOW_UNIT_MODULE = textwrap.dedent('''
    import os
    import time


    class SlowUnit:
        """A unit whose second round takes far longer than the main process waits for it."""

        def __init__(self):
            self.reported = False

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            with open(os.environ['SLOW_UNIT_MARKER'], 'w') as marker:
                marker.write('closed')

        def iterate(self):
            if self.reported:
                time.sleep(60)
            self.reported = True
            return 1, [], {'updates': 0.0, 'policy_lag': 0.0}


    def open_slow_unit(config, store, seed, index):
        return SlowUnit()
''')

SLOW_LEARNER_SCRIPT = textwrap.dedent('''
    import time

    from common import async_learners
    from common import parameter_store
    from slow_unit import open_slow_unit

    async_learners.JOIN_SECONDS = 1.0
    store = parameter_store.ParameterStore.create(4)
    try:
        learners = async_learners.LearnerProcesses(open_slow_unit, None, store.handle,
                                                   num_learners=1, seed=0)
        reports = []
        while not reports:
            reports = learners.take_reports(wait_seconds=1.0)
        started = time.monotonic()
        learners.close()
        print(f'closed in {time.monotonic() - started:.1f} s, '
              f'exit code {learners.processes[0].exitcode}')
    finally:
        store.close()
''')


def test_a_learner_slow_to_stop_is_ended_and_closes_its_unit(tmp_path):
    (tmp_path / 'slow_unit.py').write_text(SLOW_UNIT_MODULE)
    script = tmp_path / 'slow_learner.py'
    script.write_text(SLOW_LEARNER_SCRIPT)
    marker = tmp_path / 'unit_closed'
    result = subprocess.run(
        [sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, str(tmp_path)]),
                 SLOW_UNIT_MARKER=str(marker)))
    assert result.returncode == 0, result.stderr[-2000:]
    assert marker.read_text() == 'closed'
    assert 'exit code 1' in result.stdout, result.stdout  # SIGTERM -> sys.exit(1), not -15
    seconds = float(result.stdout.split('closed in ')[1].split(' s')[0])
    assert seconds < 30, result.stdout  # ended after JOIN_SECONDS, not after the 60 s round
