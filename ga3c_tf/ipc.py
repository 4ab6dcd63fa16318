"""Cheap cross-process requests and replies for a batching server (GA3C's prediction path).

Clients in other processes put 8-byte keys on a RequestPipe: one atomic pipe write, with no lock,
no feeder thread and no pickling, where multiprocessing.Queue has all three. A server thread takes
every waiting key in one read. Each reply goes into the client's row of a shared-memory ReplyBoard
and one byte on the client's own pipe wakes it; closing that pipe (the client is being stopped, or
the server process died) wakes it with end-of-file instead. No TensorFlow here: clients import it.
"""
import fcntl
import os
import select
import termios
import threading
import time
from multiprocessing import shared_memory

import numpy as np

from common.system import processes
from common.system import segments

KEY_DTYPE = np.dtype('<u8')
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ (Linux); named in fcntl from Python 3.10 on Linux
_WAKE = b'\x01'


def _pipe_capacity(fd, wanted_bytes):
    """Asks the kernel for a pipe buffer of at least wanted_bytes; returns what it holds."""
    setter = getattr(fcntl, 'F_SETPIPE_SZ', _F_SETPIPE_SZ)
    try:
        return fcntl.fcntl(fd, setter, max(wanted_bytes, 1))
    except OSError:  # above /proc/sys/fs/pipe-max-size for an unprivileged user
        return fcntl.fcntl(fd, getattr(fcntl, 'F_GETPIPE_SZ', 1032))


class RequestWriter:
    """The client side of a RequestPipe: pass it to a spawned process, call put(key) there."""

    def __init__(self, connection):
        self._connection = connection

    def put(self, key):
        """Queues one key; blocks only while the pipe is full (never, if capacity >= clients)."""
        os.write(self._connection.fileno(), KEY_DTYPE.type(key).tobytes())

    def close(self):
        self._connection.close()


class RequestPipe:
    """A bounded queue of uint64 keys from many processes to the threads of one.

    Writes of 8 bytes are atomic on a pipe (PIPE_BUF >= 512), so the pipe always holds whole keys,
    and any number of writers need no lock. capacity is rounded up to the kernel's page-sized
    pipe buffer (512 keys at least).
    """

    def __init__(self, context, capacity):
        if capacity < 1:
            raise ValueError(f'capacity={capacity!r}; must be >= 1')
        self._reader, self._writer = context.Pipe(duplex=False)
        self.capacity = _pipe_capacity(self._writer.fileno(),
                                       capacity * KEY_DTYPE.itemsize) // KEY_DTYPE.itemsize
        # Several server threads may poll the same pipe; the one that reads second must not block.
        os.set_blocking(self._reader.fileno(), False)

    def writer(self):
        return RequestWriter(self._writer)

    def take_waiting(self, max_items, timeout):
        """Waits up to timeout seconds for a key, then takes every waiting key up to max_items."""
        fd = self._reader.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if not poller.poll(timeout * 1000.0):
            return []
        try:
            data = os.read(fd, max_items * KEY_DTYPE.itemsize)
        except BlockingIOError:  # another thread took them
            return []
        return np.frombuffer(data, KEY_DTYPE).tolist()

    def qsize(self):
        """Keys waiting now."""
        waiting = fcntl.ioctl(self._reader.fileno(), termios.FIONREAD, b'\0\0\0\0')
        return int.from_bytes(waiting, 'little') // KEY_DTYPE.itemsize

    def close_writer(self):
        """Closes this process's write end (clients keep theirs)."""
        self._writer.close()

    def close(self):
        self._writer.close()
        self._reader.close()


class ReplyReader:
    """The client side of one ReplyBoard row: pass it to a spawned process, wait() there; it
    adds each wait's seconds to the row's wait totals (ReplyBoard.wait_totals)."""

    def __init__(self, connection, shm_name, shape, dtype, row):
        self._connection = connection
        self._shm_name = shm_name
        self._shape = shape
        self._dtype = dtype
        self._row = row
        self._shm = None
        self._rows = None
        self._waits = None

    def attach(self):
        self._shm = shared_memory.SharedMemory(name=self._shm_name)
        self._rows, self._waits = _board_arrays(self._shm.buf, self._shape, self._dtype)
        return self

    def wait(self, since=None):
        """Blocks for the next reply and returns a copy of it; EOFError once the pipe is closed.
        since: the time.perf_counter() of the request, whose wait is then counted (seconds, 1)
        in this row's totals (only this client writes them)."""
        if not os.read(self._connection.fileno(), 1):
            raise EOFError('the reply pipe was closed')
        reply = self._rows[self._row].copy()
        if since is not None:
            self._waits[self._row] += (time.perf_counter() - since, 1.0)
        return reply

    def close(self):
        self._rows = self._waits = None
        if self._shm is not None:
            try:
                self._shm.close()
            except BufferError:  # a view still referenced from a traceback; exiting anyway
                pass
            self._shm = None
        self._connection.close()


class ReplyBoard:
    """num_rows reply rows in shared memory, each with a wake-up pipe to the client that owns it.

    Each open() names the row's new owner (a tag, e.g. a client generation); deliver() writes only
    to the row's current owner. The lock makes that check, the write and the wake-up one step
    against open() and close_row(), so a reply meant for a stopped client never reaches its
    successor in the same row, and no wake-up goes to a closed (and reused) file descriptor.
    """

    def __init__(self, context, num_rows, row_width, dtype=np.float64):
        self._context = context
        self._dtype = np.dtype(dtype)
        self._shape = (num_rows, row_width)
        self._shm = segments.create(int(np.prod(self._shape)) * self._dtype.itemsize +
                                    num_rows * 2 * 8)
        self.rows, self._waits = _board_arrays(self._shm.buf, self._shape, self._dtype)
        self._owners = {}  # row -> (tag, the server's write end of that row's pipe)
        self._lock = threading.Lock()

    def open(self, row, tag):
        """A fresh pipe for row, owned by tag; returns the ReplyReader for the new client."""
        reader, writer = self._context.Pipe(duplex=False)
        with self._lock:
            self._close_row_locked(row)
            self._owners[row] = (tag, writer)
        return ReplyReader(reader, self._shm.name, self._shape, self._dtype, row)

    def deliver(self, rows, tags, values):
        """Writes values[i] into rows[i] and wakes its client, where tags[i] still owns it."""
        with self._lock:
            for row, tag, value in zip(rows, tags, values):
                owner = self._owners.get(row)
                if owner is None or owner[0] != tag:
                    continue  # a request of a client that has been stopped meanwhile
                self.rows[row] = value
                try:
                    os.write(owner[1].fileno(), _WAKE)
                except OSError:  # the client died; its owner finds out from the process
                    pass

    def wait_totals(self):
        """(seconds, count) the clients have waited for replies, summed over every row since
        the board opened (a row's next client adds to its predecessor's totals)."""
        seconds, count = self._waits.sum(axis=0)
        return float(seconds), int(count)

    def close_row(self, row):
        """Closes row's pipe: a client waiting on it reads end-of-file."""
        with self._lock:
            self._close_row_locked(row)

    def _close_row_locked(self, row):
        owner = self._owners.pop(row, None)
        if owner is not None:
            owner[1].close()

    def close(self):
        with self._lock:
            for row in list(self._owners):
                self._close_row_locked(row)
        self.rows = self._waits = None
        processes.release_shared_memory(self._shm)


def _board_arrays(buffer, shape, dtype):
    """The reply rows, then each row's float64 wait totals (seconds, count), in one buffer."""
    rows = np.ndarray(shape, dtype, buffer=buffer)
    waits = np.ndarray((shape[0], 2), np.float64, buffer=buffer,
                       offset=-(-rows.nbytes // 8) * 8)
    return rows, waits
