"""machine_load: the CPU seconds of a run's process tree, children included, and the load columns
every metrics row carries."""
import os
import subprocess
import sys
import time

import pytest

from common.run import machine_load

_BURN = 'import time\nend = time.process_time() + {seconds}\nwhile time.process_time() < end: pass'


def test_a_childs_cpu_counts_while_it_runs_and_after_it_is_reaped():
    before = machine_load.tree_cpu_seconds()
    child = subprocess.Popen([sys.executable, '-c', _BURN.format(seconds=1.0) + '\ntime.sleep(30)'])
    try:
        deadline = time.monotonic() + 20
        # Waits on the child's own seconds: ours (this process's polling) count in the tree's.
        while machine_load.tree_cpu_seconds(child.pid) < 0.9 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert machine_load.tree_cpu_seconds() - before >= 0.9  # live descendant
        # Not a descendant: the same process seen from another root is not ours.
        assert machine_load.tree_cpu_seconds(child.pid) >= 0.9
    finally:
        child.kill()
        child.wait()
    assert machine_load.tree_cpu_seconds() - before >= 0.9  # reaped: in our children's time


def test_interval_load_reports_the_cores_the_tree_kept_busy():
    """One busy thread: the cores reported are the CPU this process got over the wall time (on a
    loaded machine a busy thread gets less than a core), measured by ticks."""
    load = machine_load.IntervalLoad()
    start, cpu_start = time.perf_counter(), time.process_time()
    end = cpu_start + 0.5
    while time.process_time() < end:
        pass
    seconds = time.perf_counter() - start
    got = (time.process_time() - cpu_start) / seconds
    columns = load.take(seconds)
    assert set(columns) == set(machine_load.IntervalLoad.COLUMNS)
    assert 0.8 * got - 0.05 <= columns['run_cpu_cores'] <= 2.5, (columns, got)
    assert columns['load_1m'] == pytest.approx(os.getloadavg()[0], abs=2.0)
    idle = load.take(1.0)  # nothing burned since the last take
    assert idle['run_cpu_cores'] < 0.3
