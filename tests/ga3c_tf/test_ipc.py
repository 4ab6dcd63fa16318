"""RequestPipe and ReplyBoard: batching reads, bounded capacity, replies only to their owner."""
import multiprocessing
import os
import select
import time

import numpy as np
import pytest

from ga3c_tf import ipc


@pytest.fixture
def context():
    return multiprocessing.get_context('spawn')


def test_take_waiting_returns_keys_in_order_up_to_max_items(context):
    requests = ipc.RequestPipe(context, capacity=100)
    writer = requests.writer()
    try:
        for key in (7, 1 << 40, 3, 0, 12):
            writer.put(key)
        assert requests.qsize() == 5
        assert requests.take_waiting(3, timeout=0.1) == [7, 1 << 40, 3]
        assert requests.qsize() == 2
        assert requests.take_waiting(10, timeout=0.1) == [0, 12]
        assert requests.take_waiting(10, timeout=0.01) == []
    finally:
        requests.close()


def test_capacity_holds_at_least_what_was_asked_for(context):
    requests = ipc.RequestPipe(context, capacity=1000)
    try:
        assert requests.capacity >= 1000
        assert requests.capacity % 512 == 0
    finally:
        requests.close()
    with pytest.raises(ValueError, match='capacity=0'):
        ipc.RequestPipe(context, capacity=0)


def _readable(reader):
    poller = select.poll()
    poller.register(reader._connection.fileno(), select.POLLIN)  # pylint: disable=protected-access
    return bool(poller.poll(0))


def test_a_reply_reaches_only_the_rows_current_owner(context):
    board = ipc.ReplyBoard(context, num_rows=3, row_width=4)
    old_reader = board.open(1, tag=5)
    reader = board.open(1, tag=6).attach()  # row 1 now belongs to tag 6
    try:
        with pytest.raises(EOFError):
            old_reader.attach().wait()  # reopening a row closes its previous client's pipe
        board.deliver([1], [5], [np.full(4, -1.0)])  # stale: dropped, no wake-up
        assert not _readable(reader)
        board.deliver([1, 2], [6, 9], [np.arange(4.0), np.ones(4)])  # row 2 has no owner
        np.testing.assert_array_equal(reader.wait(), np.arange(4.0))
        assert not _readable(reader)
        np.testing.assert_array_equal(board.rows[2], np.zeros(4))
    finally:
        old_reader.close()
        reader.close()
        board.close()


def test_closing_a_row_wakes_its_client_with_end_of_file(context):
    board = ipc.ReplyBoard(context, num_rows=1, row_width=2)
    reader = board.open(0, tag=1).attach()
    try:
        board.close_row(0)
        with pytest.raises(EOFError, match='closed'):
            reader.wait()
        board.deliver([0], [1], [np.ones(2)])  # after close_row: nothing to write to, no error
    finally:
        reader.close()
        board.close()


def test_board_close_releases_its_shared_memory(context):
    board = ipc.ReplyBoard(context, num_rows=2, row_width=2)
    name = board._shm.name  # pylint: disable=protected-access
    board.close()
    assert not os.path.exists(f'/dev/shm/{name.lstrip("/")}')


def test_timed_waits_add_up_per_row_and_a_rows_next_client_goes_on_from_them(context):
    board = ipc.ReplyBoard(context, num_rows=2, row_width=3)
    first = board.open(0, tag=1).attach()
    other = board.open(1, tag=1).attach()
    try:
        assert board.wait_totals() == (0.0, 0)
        board.deliver([0], [1], [np.ones(3)])
        since = time.perf_counter() - 0.25  # as if asked a quarter second ago
        np.testing.assert_array_equal(first.wait(since), np.ones(3))
        board.deliver([1], [1], [np.ones(3)])
        other.wait()  # untimed: not counted
        seconds, count = board.wait_totals()
        assert count == 1 and 0.25 <= seconds < 1.0
        second = board.open(0, tag=2).attach()  # row 0's next client
        board.deliver([0], [2], [np.zeros(3)])
        second.wait(time.perf_counter() - 0.5)
        seconds, count = board.wait_totals()
        assert count == 2 and 0.75 <= seconds < 1.5
        np.testing.assert_array_equal(board.rows[0], np.zeros(3))  # the reply row is untouched
        second.close()
    finally:
        first.close()
        other.close()
        board.close()
