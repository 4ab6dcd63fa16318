"""processes.confined_to_cpus: every thread and child confined, every thread given back its CPUs."""
import os
import subprocess
import sys
import threading

import pytest

from common.system import processes

pytestmark = pytest.mark.skipif(not hasattr(os, 'sched_setaffinity'), reason='Linux only')


def _parked_thread():
    """A started thread that waits until the returned event is set."""
    release = threading.Event()
    thread = threading.Thread(target=release.wait, daemon=True)
    thread.start()
    return thread, release


def test_threads_and_children_are_confined_and_given_back():
    allowed = sorted(os.sched_getaffinity(0))
    before, release = _parked_thread()
    try:
        with processes.confined_to_cpus(1) as warning:
            assert warning is None
            assert os.sched_getaffinity(0) == {allowed[0]}
            assert os.sched_getaffinity(before.native_id) == {allowed[0]}
            during, release_during = _parked_thread()
            child = subprocess.run(
                [sys.executable, '-c', 'import os; print(sorted(os.sched_getaffinity(0)))'],
                capture_output=True, text=True, check=True)
            assert child.stdout.strip() == str([allowed[0]])
        assert os.sched_getaffinity(0) == set(allowed)
        assert os.sched_getaffinity(before.native_id) == set(allowed)
        assert os.sched_getaffinity(during.native_id) == set(allowed)
        release_during.set()
    finally:
        release.set()


def test_more_cpus_than_allowed_is_refused_and_nothing_changes():
    allowed = os.sched_getaffinity(0)
    with pytest.raises(ValueError, match=f'cannot confine to {len(allowed) + 1} CPUs'):
        with processes.confined_to_cpus(len(allowed) + 1):
            pass
    assert os.sched_getaffinity(0) == allowed
