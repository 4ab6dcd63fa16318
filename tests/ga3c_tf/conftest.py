"""Fixtures of the GA3C tests."""
import time

import pytest


def _stop_when(thread, done, seconds=5.0, join_seconds=2.0):
    """Waits until done() (at most seconds, looking every 0.01 s), then stops the thread (its
    stop()) and joins it (at most join_seconds)."""
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        time.sleep(0.01)
    thread.stop()
    thread.join(timeout=join_seconds)


@pytest.fixture
def stop_when():
    """stop_when(thread, done, seconds=5.0, join_seconds=2.0): a started predictor or trainer
    thread, stopped once done() or seconds have passed."""
    return _stop_when
