"""heap.release_free_heap: freed C-heap pages go back to the OS; the tracker does so each row
and each checkpoint."""
import io
import platform
import subprocess
import sys
import textwrap

import common  # noqa: F401
import pytest
import tensorflow as tf

from common.run import tracker as tracker_lib
from common.system import heap

GLIBC = sys.platform.startswith('linux') and platform.libc_ver()[0] == 'glibc'

# 2,000 blocks of 100 kB (under glibc's mmap threshold: inside the heap), freed below five still
# in use, so the heap cannot shrink from its top: the freed pages stay resident until trimmed.
_FRAGMENTED = textwrap.dedent("""
    import os
    from common.system import heap

    def rss_mb():
        with open('/proc/self/statm') as f:
            return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 2**20

    blocks = [bytearray(os.urandom(16)) * 6_250 for _ in range(2_000)]
    above = [bytearray(os.urandom(16)) * 6_250 for _ in range(5)]
    del blocks
    before = rss_mb()
    released = heap.release_free_heap()
    print(before, rss_mb(), released)
""")


@pytest.mark.skipif(not GLIBC, reason='malloc_trim is glibc')
def test_freed_heap_pages_go_back_to_the_os():
    assert heap.can_release()
    result = subprocess.run([sys.executable, '-c', _FRAGMENTED], capture_output=True, text=True,
                            check=True)
    before, after, released = result.stdout.split()
    # 200 MB were written and freed; without the trim they stay resident.
    assert float(before) - float(after) > 150, result.stdout
    assert released == 'True'


@pytest.mark.skipif(GLIBC, reason='the fallback of a C library without malloc_trim')
def test_without_malloc_trim_nothing_is_released():
    assert not heap.can_release() and heap.release_free_heap() is False


def test_the_tracker_releases_the_heap_after_each_row_and_checkpoint(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(heap, 'release_free_heap', lambda: calls.append('released'))
    tracker = tracker_lib.RunTracker(str(tmp_path), total_steps=100, log_every_seconds=1e-6,
                                     checkpoint_every_steps=30,
                                     trackables={'weights': tf.Variable(1.0)},
                                     stream=io.StringIO())
    tracker.add_steps(10, updates=1)
    tracker.log_interval(updates=1)
    assert calls == ['released']
    tracker.save()
    assert calls == ['released'] * 2
    tracker.close()
