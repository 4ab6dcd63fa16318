"""machine_load: the CPU seconds of a run's process tree, children included, and the load columns
every metrics row carries."""
import os
import subprocess
import sys
import time

import pytest

from common.system import machine_load

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


ZEN1 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 23
model\t\t: 1
model name\t: AMD EPYC 7551 32-Core Processor
flags\t\t: fpu sse2 avx avx2 fma

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: another
flags\t\t: avx512f
"""


def test_the_cpu_is_named_by_family_model_and_the_vector_extensions_that_matter():
    identity = machine_load.cpu_identity(ZEN1)
    assert identity == {'cpu_model': 'AMD EPYC 7551 32-Core Processor',
                        'cpu_vendor': 'AuthenticAMD', 'cpu_family': '23',
                        'cpu_model_number': '1', 'cpu_flags': ['avx2']}
    assert machine_load.cpu_identity('')['cpu_family'] == '?'
    record = dict(identity, usable_cores=2)
    assert machine_load.describe(record) == \
        'AMD EPYC 7551 32-Core Processor (family 23 model 1; avx2), 2 cores'
    # A record of a run begun before family and flags were kept.
    assert machine_load.describe({'cpu_model': 'AMD EPYC', 'usable_cores': 2}) == \
        'AMD EPYC, 2 cores'
    here = machine_load.machine_record()
    assert here['cpu_family'] != '?' and here['usable_cores'] >= 1


def test_the_resident_memory_of_the_tree_counts_a_childs_and_every_row_has_it():
    """A child holding 200 MB (touched, so resident) adds it to the tree's rss_mb, and the
    interval columns carry the tree's figure."""
    before = machine_load.tree_rss_mb()
    child = subprocess.Popen(
        [sys.executable, '-c', 'import sys, time\nheld = bytearray(200_000_000)\n'
         'print("held", flush=True)\ntime.sleep(60)'], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == 'held'
        with_child = machine_load.tree_rss_mb()
        assert 200 <= with_child - before <= 260, (before, with_child)
        assert 200 <= machine_load.tree_rss_mb(child.pid) <= 260
        columns = machine_load.IntervalLoad().take(1.0)
        assert columns['rss_mb'] == pytest.approx(with_child, rel=0.05)
    finally:
        child.kill()
        child.wait()
    assert machine_load.tree_rss_mb() < before + 50  # an ended child holds nothing


STAT = """cpu  3417067 674333 188544 608174 1909 0 678 63208 0 0
cpu0 1708533 337166 94272 304087 954 0 339 31604 0 0
intr 123
"""


def test_steal_is_the_hosts_share_of_all_the_machines_cpu_ticks():
    """/proc/stat's aggregate line: steal is its eighth value; the share is of all eight's sum
    between two readings (guest time already counts in user and nice)."""
    before = machine_load.cpu_ticks(STAT)
    assert before == (63208, 3417067 + 674333 + 188544 + 608174 + 1909 + 0 + 678 + 63208)
    # 10 s on 2 cores at 100 ticks/s: 2,000 ticks, 900 of them stolen.
    after = (before[0] + 900, before[1] + 2000)
    assert machine_load.steal_pct(before, after) == pytest.approx(45.0)
    assert machine_load.steal_pct(before, before) is None  # no tick passed
    assert machine_load.steal_pct(None, after) is None
    assert machine_load.cpu_ticks('cpu  1 2 3 4\n') is None  # no steal field
    assert machine_load.cpu_ticks('intr 1\n') is None
    here = machine_load.IntervalLoad().take(0.1)['steal_pct']
    assert here is None or 0.0 <= here <= 100.0
