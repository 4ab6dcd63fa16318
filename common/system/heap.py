"""Gives the C heap's free pages back to the operating system (glibc's malloc_trim).

A long run's main thread allocates and frees the same few-megabyte buffers for hours (each
checkpoint's write and read-back, each update's batch); glibc keeps what was freed inside its
heap, behind a chunk still in use above it, so the resident memory climbs a step at a time
without anything being held (PAAC's 10M-step games: about 3 MB a checkpoint, BENCHMARKS.md
"Memory over hours"). malloc_trim(0) returns every free page of every arena.
"""
import ctypes
import sys

__all__ = ('release_free_heap', 'can_release')


def _malloc_trim():
    """glibc's malloc_trim, or None where the C library has none (macOS, musl, Windows)."""
    if not sys.platform.startswith('linux'):
        return None
    try:
        libc = ctypes.CDLL(None)  # the symbols the process already has, its C library among them
    except OSError:
        return None
    trim = getattr(libc, 'malloc_trim', None)
    if trim is not None:
        trim.argtypes = (ctypes.c_size_t,)
        trim.restype = ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def can_release():
    """Whether this process's C library can give free heap pages back (glibc)."""
    return _TRIM is not None


def release_free_heap():
    """Returns the C heap's free pages to the operating system; True if any were returned,
    False if none were or the C library cannot (not glibc). A few milliseconds at most."""
    return bool(_TRIM(0)) if _TRIM is not None else False
