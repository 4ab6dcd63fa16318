"""A replay memory on disk: saved when a session ends cleanly, restored when the next one resumes.

The paper agents train from one continuous replay of the last 1M transitions; a run resumed with
an empty replay trains on freshly refilled random-policy data for a while instead. So a session
that ends cleanly (total_steps reached, Ctrl-C or SIGTERM) saves its replay beside its final
checkpoint, as Dopamine checkpoints its replay buffer (dopamine/replay_memory/
circular_replay_buffer.py, save/load: np.save of each array, gzipped there), and the next
session restores it if it belongs to the checkpoint it resumed from. Only at a session's end: a
Pong replay of 1M frames is ~7 GB; one stopped before its streams wrap saves only the positions
written so far.

A saved replay is a directory: one uncompressed .npy file per array (np.save's format, written
in one pass: seconds for GBs; memory-mapped to read back without a second copy of the frames,
np.load(mmap_mode='r')) and META_FILE, a small JSON of
the settings, shapes, dtypes, random-generator states and the env step it belongs to. It is
written into a temporary directory beside its place and renamed there, so a crash leaves the
previous one or none, never a part of one. Nothing here imports TensorFlow.
"""
import json
import os
import shutil
import time

import numpy as np

from common.system import file_writes

__all__ = ('REPLAY_DIR', 'META_FILE', 'FORMAT', 'ReplayFileError', 'WriteGuard', 'free_bytes',
           'disk_margin', 'write_directory', 'read_meta', 'load_array', 'copy_array_into',
           'save_for_resume', 'restore_for_resume')

REPLAY_DIR = 'replay'        # inside a run directory: the one saved replay
META_FILE = 'replay.json'
FORMAT = 1                   # of META_FILE and the arrays beside it
TEMP_MARK = '.tmp-'          # <dir>.tmp-<pid>: a save being written
OLD_MARK = '.old-'           # <dir>.old-<pid>: the previous save, for the instant of the swap
CHUNK_BYTES = 64 << 20       # frames are copied back in slices of this size
_NPY_HEADER_BYTES = 4096     # room counted per .npy file for its header (and the block it opens)
_GB = 1e9


class ReplayFileError(ValueError):
    """A replay cannot be saved or restored; the message says which file or setting and why, in
    one line."""


class WriteGuard:
    """Whether a replay's arrays are whole: a save refuses one with a write under way, or one
    an interrupt cut short (a Ctrl-C inside a write leaves half a step), until it is cleared or
    restored."""

    def __init__(self):
        self.reset()

    def reset(self):
        self._writing = False
        self.cut_short = False

    def begin(self):
        if self._writing:  # the write before never finished
            self.cut_short = True
        self._writing = True

    def end(self):
        self._writing = False

    def refuse_save(self, consequence):
        """ReplayFileError saying the consequence if a write is under way or was cut short."""
        if self._writing or self.cut_short:
            raise ReplayFileError('a write into replay was cut short (an interrupt inside it); '
                                  + consequence)


def free_bytes(path):
    """Bytes free for this user on the file system holding path (shutil.disk_usage)."""
    return shutil.disk_usage(path).free


def disk_margin(nbytes):
    """The room a save leaves free besides its nbytes: 256 MiB or 5%, whichever is larger, so the
    run's checkpoints and logs still fit after it."""
    return max(256 << 20, nbytes // 20)


def _size_of(directory):
    """Bytes of the files directly inside directory (0 if it does not exist)."""
    if not os.path.isdir(directory):
        return 0
    return sum(entry.stat().st_size for entry in os.scandir(directory) if entry.is_file())


def _remove_leftovers(directory):
    """Removes what a save killed before its end (SIGKILL, power loss) left beside directory."""
    parent, base = os.path.split(directory)
    for name in os.listdir(parent):
        if name.startswith(base + TEMP_MARK) or name.startswith(base + OLD_MARK):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def _parts(array):
    """array alone if C-contiguous (or 1-D), else its slices along the first axis: a replay's
    arrays cut to their filled positions are contiguous slice by slice, so a copy can go through
    them without a second copy of the whole array in memory."""
    return [array] if array.flags.c_contiguous or array.ndim < 2 else list(array)


def _write_npy(path, array):
    """array (C-contiguous, or contiguous in each slice along its first axis) as the .npy file
    path, what np.save writes, flushed to the disk; the data goes through file writes whose
    OSError names the cause (np.save's tofile says only how many bytes it wrote), and path is
    named in any OSError."""
    with file_writes.naming(path):
        with open(path, 'wb') as f:
            np.lib.format.write_array_header_1_0(
                f, np.lib.format.header_data_from_array_1_0(array))
            for part in _parts(array):  # a copy only of a part that is not contiguous
                f.write(memoryview(np.ascontiguousarray(part).reshape(-1)).cast('B'))
            f.flush()
            os.fsync(f.fileno())


def _write_meta(path, meta):
    with file_writes.naming(path):
        with open(path, 'w') as f:
            json.dump(meta, f, indent=1)
            f.flush()
            os.fsync(f.fileno())


def _fsync_directory(path):
    """Makes the renames inside path durable (where the OS allows opening a directory)."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _swap(temporary, directory):
    """Puts temporary in directory's place: the previous directory (if any) is renamed aside,
    temporary renamed in, then the previous one removed; put back if the rename in fails."""
    previous = None
    if os.path.lexists(directory):
        previous = f'{directory}{OLD_MARK}{os.getpid()}'
        with file_writes.naming(directory):
            os.rename(directory, previous)
    try:
        with file_writes.naming(directory):
            os.rename(temporary, directory)
    except BaseException:
        if previous is not None:
            os.rename(previous, directory)
        raise
    if previous is not None:
        shutil.rmtree(previous, ignore_errors=True)
    _fsync_directory(os.path.dirname(directory))


def write_directory(directory, arrays, meta, margin_bytes=None):
    """Writes arrays (name -> ndarray, each as name.npy) and meta (META_FILE) as directory,
    replacing the one there; returns (bytes written, whether the previous one had to be removed
    first to make room).

    Written into a temporary directory beside it, then renamed in. Before writing, the free space
    must hold it plus margin_bytes (None: disk_margin); if it does only without the previous save
    (which the checkpoint just written has superseded), that one is removed first. ReplayFileError,
    with nothing of the attempt left on disk, if it does not fit or a write fails."""
    directory = os.path.abspath(directory)
    parent = os.path.dirname(directory)
    needed = sum(array.nbytes + _NPY_HEADER_BYTES for array in arrays.values()) + \
        _NPY_HEADER_BYTES
    margin = disk_margin(needed) if margin_bytes is None else margin_bytes
    try:
        with file_writes.naming(parent):
            _remove_leftovers(directory)
            free = free_bytes(parent)
            previous_bytes = _size_of(directory)
        removed_previous = False
        if free < needed + margin:
            if free + previous_bytes < needed + margin:
                kept = f'; {directory} stays as it was' if previous_bytes else ''
                raise ReplayFileError(
                    f'{needed / _GB:.3f} GB would not fit in {parent}: {free / _GB:.3f} GB '
                    f'free, {margin / _GB:.3f} GB kept as margin{kept}')
            with file_writes.naming(directory):
                shutil.rmtree(directory)
            removed_previous = True
    except OSError as error:
        raise ReplayFileError(f'cannot prepare {error.filename or parent} for a replay: '
                              f'{error.strerror or error}') from None
    temporary = f'{directory}{TEMP_MARK}{os.getpid()}'
    try:
        with file_writes.naming(temporary):
            os.mkdir(temporary)
        for name, array in arrays.items():
            _write_npy(os.path.join(temporary, name + '.npy'), np.asarray(array))
        _write_meta(os.path.join(temporary, META_FILE), meta)
        _swap(temporary, directory)
    except BaseException as error:
        shutil.rmtree(temporary, ignore_errors=True)
        if not isinstance(error, OSError):
            raise
        kept = (f'{directory} stays as it was' if os.path.isdir(directory)
                else f'no saved replay is left in {parent}')
        raise ReplayFileError(f'cannot write {error.filename or temporary}: '
                              f'{error.strerror or error}; the partial files were removed and '
                              f'{kept}') from None
    return _size_of(directory), removed_previous


def read_meta(directory):
    """The META_FILE of a saved replay; ReplayFileError if it is missing, damaged or of another
    format."""
    path = os.path.join(directory, META_FILE)
    try:
        with open(path) as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise ReplayFileError(f'{path} is missing: {directory} is not a whole saved '
                              f'replay') from None
    except (OSError, ValueError) as error:
        raise ReplayFileError(f'{path} is damaged ({type(error).__name__}: '
                              f'{str(error)[:120]})') from None
    if not isinstance(meta, dict) or meta.get('format') != FORMAT:
        found = meta.get('format') if isinstance(meta, dict) else type(meta).__name__
        raise ReplayFileError(f'{path} has format {found!r}; allowed: {FORMAT}')
    return meta


def _open_array(directory, name, shape, dtype, mmap_mode):
    """np.load of name.npy, checked to hold shape and dtype; ReplayFileError naming the file."""
    path = os.path.join(directory, name + '.npy')
    try:
        array = np.load(path, mmap_mode=mmap_mode, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        cause = getattr(error, 'strerror', None) or str(error)
        raise ReplayFileError(f'{path} is missing or damaged ({cause[:160]})') from None
    if array.shape != tuple(shape) or array.dtype != np.dtype(dtype):
        raise ReplayFileError(f'{path} holds {array.dtype} {array.shape}; this replay needs '
                              f'{np.dtype(dtype)} {tuple(shape)}')
    return array


def load_array(directory, name, shape, dtype):
    """name.npy of a saved replay read whole (a small array), checked to be shape and dtype."""
    return _open_array(directory, name, shape, dtype, mmap_mode=None)


def copy_array_into(directory, name, target, chunk_bytes=CHUNK_BYTES):
    """Copies name.npy into target (same shape and dtype; C-contiguous, or contiguous in each
    slice along its first axis) through a read-only memory map, slice by slice, so the file is
    never held in memory beside target."""
    source = _open_array(directory, name, target.shape, target.dtype, mmap_mode='r')
    parts = _parts(target)
    if not all(part.flags.c_contiguous for part in parts):
        raise ValueError(f'copy_array_into: a target of shape {target.shape} and strides '
                         f'{target.strides} is not contiguous slice by slice')
    sources = [source] if len(parts) == 1 else list(source)
    for source_part, target_part in zip(sources, parts):
        rows_source = source_part.reshape((-1,) + source_part.shape[2:]) \
            if source_part.ndim > 1 else source_part
        rows_target = target_part.reshape(rows_source.shape)  # a view: contiguous
        step = max(1, chunk_bytes // max(1, rows_source[:1].nbytes))
        for start in range(0, len(rows_source), step):
            rows_target[start:start + step] = rows_source[start:start + step]


def save_for_resume(replay, run_dir, env_steps, margin_bytes=None):
    """At a session's clean end, after its final checkpoint: replay (a ReplayMemory or
    PrioritizedReplay) into run_dir/REPLAY_DIR as the replay of env_steps, with one line saying
    where, how big and how long, or why not. Returns the directory, or None if nothing was saved;
    never raises for a full disk or a failed write (the checkpoint is saved: the next session
    refills replay as without a save)."""
    directory = os.path.join(run_dir, REPLAY_DIR)
    start = time.perf_counter()
    try:
        nbytes, removed_previous = replay.save(directory, env_steps, margin_bytes=margin_bytes)
    except ReplayFileError as error:
        print(f'replay not saved: {error}', flush=True)
        return None
    note = ' (the previous save was removed first: no room for both)' if removed_previous else ''
    print(f'replay saved to {directory}: {len(replay):,} steps of step {env_steps:,}, '
          f'{nbytes / _GB:.2f} GB in {time.perf_counter() - start:.1f} s{note}', flush=True)
    return directory


def restore_for_resume(replay, run_dir, env_steps, carried=False):
    """On resume from the checkpoint of env_steps: run_dir/REPLAY_DIR into replay (which must
    be new) if it is the replay of that step and fits this run's settings; returns whether it
    was. One line either way: what was restored (size, seconds), or why replay is refilled.
    carried: the run was carried from another machine (common/run/carry.py), without replay."""
    directory = os.path.join(run_dir, REPLAY_DIR)
    if carried and not os.path.isdir(directory):
        print(f'replay memory is refilled: a carried run carries no replay (step '
              f'{env_steps:,} goes on after the warm-up a run starts with)', flush=True)
        return False
    if not os.path.isdir(directory):
        print(f'replay memory is refilled: no saved replay in {run_dir} (one is saved when a '
              'session ends cleanly, not at a kill)', flush=True)
        return False
    start = time.perf_counter()
    try:
        replay.restore(directory, env_steps)
    except ReplayFileError as error:
        print(f'replay memory is refilled: {error}', flush=True)
        return False
    print(f'replay restored from {directory}: {len(replay):,} steps of step {env_steps:,}, '
          f'{_size_of(directory) / _GB:.2f} GB in {time.perf_counter() - start:.1f} s',
          flush=True)
    return True
