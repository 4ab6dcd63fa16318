"""The asynchronous learners' plumbing: flat parameter vectors round-trip through a model's
variables, a learner process that does not stop in time is ended with its actor-learner closed
(its environment pool would otherwise be left to the orphan watchdogs), and the main process removes
the shared memory of a learner that died."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from common.units import async_learners

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


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


# Spawned learners import open_actor_learner by name (not from __main__), so it lives in a module.
SLOW_ACTOR_LEARNER_MODULE = textwrap.dedent('''
    import os
    import time


    class SlowActorLearner:
        """An actor-learner whose second round takes far longer than the main process waits
        for it."""

        def __init__(self):
            self.reported = False

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            with open(os.environ['SLOW_ACTOR_LEARNER_MARKER'], 'w') as marker:
                marker.write('closed')

        def iterate(self):
            if self.reported:
                time.sleep(60)
            self.reported = True
            return 1, [], {'updates': 0.0, 'policy_lag': 0.0}


    def open_slow_actor_learner(config, store, seed, index):
        return SlowActorLearner()
''')

SLOW_LEARNER_SCRIPT = textwrap.dedent('''
    import time

    from common.units import async_learners
    from common.units import parameter_store
    from slow_actor_learner import open_slow_actor_learner

    async_learners.JOIN_SECONDS = 1.0
    store = parameter_store.ParameterStore.create(4)
    try:
        learners = async_learners.LearnerProcesses(open_slow_actor_learner, None, store.handle,
                                                   num_actor_learners=1, seed=0)
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


@pytest.mark.slow
def test_a_learner_slow_to_stop_is_ended_and_closes_its_actor_learner(tmp_path):
    (tmp_path / 'slow_actor_learner.py').write_text(SLOW_ACTOR_LEARNER_MODULE)
    script = tmp_path / 'slow_learner.py'
    script.write_text(SLOW_LEARNER_SCRIPT)
    marker = tmp_path / 'actor_learner_closed'
    result = subprocess.run(
        [sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, str(tmp_path)]),
                 SLOW_ACTOR_LEARNER_MARKER=str(marker)))
    assert result.returncode == 0, result.stderr[-2000:]
    assert marker.read_text() == 'closed'
    assert 'exit code 1' in result.stdout, result.stdout  # SIGTERM -> sys.exit(1), not -15
    seconds = float(result.stdout.split('closed in ')[1].split(' s')[0])
    assert seconds < 30, result.stdout  # ended after JOIN_SECONDS, not after the 60 s round


DYING_ACTOR_LEARNER_MODULE = textwrap.dedent('''
    import os
    import time


    class ActorLearner:
        """Learner 1 dies (SIGKILL-like: no report) on its third round; learner 0 goes on."""

        def __init__(self, index):
            self.index = index
            self.rounds = 0

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            pass

        def iterate(self):
            self.rounds += 1
            time.sleep(0.01)
            if self.index == 1 and self.rounds == 3:
                os._exit(9)
            return 1, [], {'updates': 1.0, 'policy_lag': 0.0}


    def open_actor_learner(config, store, seed, index):
        return ActorLearner(index)
''')

DYING_LEARNER_SCRIPT = textwrap.dedent('''
    import sys
    import time

    from common.system import processes
    from common.units import async_learners
    from common.units import parameter_store
    from dying_actor_learner import open_actor_learner

    store = parameter_store.ParameterStore.create(4)
    try:
        with async_learners.LearnerProcesses(open_actor_learner, None, store.handle, num_actor_learners=2,
                                             seed=0, on_death=sys.argv[1]) as learners:
            after_loss = 0  # learner 0's reports once learner 1 is left out
            deadline = time.monotonic() + 150  # the learners' start-up (TensorFlow's import)
            reported = False
            try:
                while after_loss < 20 and time.monotonic() < deadline:
                    for index, _, _, _ in learners.take_reports():
                        if not reported:  # 60 s of reports from the first on
                            reported, deadline = True, time.monotonic() + 60
                        after_loss += bool(learners.lost) and index == 0
            except processes.WorkerDiedError as error:
                print(f'stopped: {error}')
            print(f'reports after the loss {after_loss} lost {sorted(learners.lost)}')
    finally:
        store.close()
''')


def _run_dying_learners(tmp_path, on_death):
    (tmp_path / 'dying_actor_learner.py').write_text(DYING_ACTOR_LEARNER_MODULE)
    script = tmp_path / 'dying_learners.py'
    script.write_text(DYING_LEARNER_SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script), on_death], cwd=REPO, capture_output=True, text=True,
        timeout=300, env=dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, str(tmp_path)])))
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


@pytest.mark.slow
def test_a_dead_learner_stops_the_run_or_is_left_out_as_configured(tmp_path):
    stopped = _run_dying_learners(tmp_path, 'stop')
    assert 'stopped: learner 1 (pid' in stopped and 'died with exit code 9' in stopped, stopped
    going_on = _run_dying_learners(tmp_path, 'continue')
    assert "learner 1 (pid" in going_on and "going on with 1 learner (on_learner_death = " \
        "'continue')" in going_on, going_on
    assert 'stopped' not in going_on
    assert going_on.strip().endswith('lost [1]'), going_on
    assert 'reports after the loss 20' in going_on, going_on  # learner 0 went on


# An actor-learner holding an environment pool (a shared-memory segment its learner creates);
# learner 1 writes the segment's name down, then dies by SIGKILL, which removes nothing.
POOL_ACTOR_LEARNER_MODULE = textwrap.dedent('''
    import os
    import signal
    import time

    from common.envs import GymConfig, ProcessPool


    class ActorLearner:
        def __init__(self, index):
            self.index = index
            self.rounds = 0
            self.pool = None

        def __enter__(self):
            self.pool = ProcessPool(GymConfig(), 2, num_workers=1)
            return self

        def __exit__(self, *exc_info):
            self.pool.close()

        def iterate(self):
            self.rounds += 1
            time.sleep(0.01)
            if self.index == 1 and self.rounds == 3:
                with open(os.environ['KILLED_POOL_SEGMENT'], 'w') as f:
                    f.write(self.pool.shm_name)
                os.kill(os.getpid(), signal.SIGKILL)
            return 1, [], {'updates': 1.0, 'policy_lag': 0.0}


    def open_actor_learner(config, store, seed, index):
        return ActorLearner(index)
''')

KILLED_LEARNER_SCRIPT = textwrap.dedent('''
    import os
    import time

    from common.units import async_learners
    from common.units import parameter_store
    from pool_actor_learner import open_actor_learner

    store = parameter_store.ParameterStore.create(4)
    try:
        with async_learners.LearnerProcesses(open_actor_learner, None, store.handle, num_actor_learners=2,
                                             seed=0, on_death='continue') as learners:
            after_loss = 0  # learner 0's reports once learner 1 is left out
            deadline = time.monotonic() + 60
            while after_loss < 20 and time.monotonic() < deadline:
                for index, _, _, _ in learners.take_reports():
                    after_loss += bool(learners.lost) and index == 0
            with open(os.environ['KILLED_POOL_SEGMENT']) as f:
                name = f.read()
            print(f'while learner 0 goes on: segment {name} exists '
                  f'{os.path.exists("/dev/shm/" + name)}', flush=True)
    finally:
        store.close()
''')


@pytest.mark.slow
def test_a_killed_learners_segment_is_removed_while_the_others_go_on(tmp_path, process_tree):
    """A SIGKILLed learner cannot remove its pool's segment; multiprocessing's resource tracker
    would only at the end of the run, with a warning. With on_learner_death 'continue' that
    end can be days away: the main process removes it as soon as the learner is gone."""
    shm_before = process_tree.shm_entries()
    (tmp_path / 'pool_actor_learner.py').write_text(POOL_ACTOR_LEARNER_MODULE)
    script = tmp_path / 'killed_learner.py'
    script.write_text(KILLED_LEARNER_SCRIPT)
    result = subprocess.run(
        [sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, timeout=180,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, str(tmp_path)]),
                 KILLED_POOL_SEGMENT=str(tmp_path / 'segment')))
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'going on with 1 learner' in result.stdout, result.stdout
    assert 'exists False' in result.stdout, result.stdout
    assert 'leaked shared_memory' not in result.stderr, result.stderr[-2000:]
    assert not process_tree.leaked_shm(shm_before)
