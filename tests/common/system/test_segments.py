"""Segments named by prefix and removed by it (a dead creator's, even one it had not sized yet),
and Ctrl-C held back while a teardown runs."""
import os
import signal

import pytest

from common.system import processes
from common.system import segments


def test_a_scope_names_what_is_created_in_it_and_removes_what_is_left():
    outside = segments.create(16)
    try:
        with segments.scope() as name_prefix:
            kept = segments.create(16)
            child = segments.child_prefix()
            assert kept.name.startswith(name_prefix) and child.startswith(name_prefix)
            # What a child SIGKILLed in SharedMemory() leaves: created, not yet sized.
            os.close(os.open(f'/dev/shm/{child}deadbeef', os.O_CREAT | os.O_RDWR, 0o600))
            kept.close()
        assert not [name for name in os.listdir('/dev/shm') if name.startswith(name_prefix)]
        assert segments.prefix() != name_prefix
        assert os.path.exists(f'/dev/shm/{outside.name}')  # not the scope's: kept
    finally:
        processes.release_shared_memory(outside)


def test_held_interrupts_run_the_handler_at_once_and_raise_after_the_block():
    calls = []

    def stop(signum, frame):  # as app's first Ctrl-C: switch to 'already stopping', raise
        calls.append('stop')
        signal.signal(signal.SIGINT, already_stopping)
        raise KeyboardInterrupt

    def already_stopping(signum, frame):
        calls.append('already stopping')

    previous = signal.signal(signal.SIGINT, stop)
    try:
        with pytest.raises(KeyboardInterrupt):
            with processes.held_interrupts():
                signal.raise_signal(signal.SIGINT)
                signal.raise_signal(signal.SIGINT)
                calls.append('teardown done')
        assert calls == ['stop', 'already stopping', 'teardown done']
        assert signal.getsignal(signal.SIGINT) is already_stopping  # the handler's switch stays
    finally:
        signal.signal(signal.SIGINT, previous)
