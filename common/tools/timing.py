"""Throughput as the bench rows measure it: warm up, then count, keeping the spread.

A row's figure is its steps over its seconds; its spread is the min, median and max of the
rates of the windows inside (about a second each, or whatever unit the row times, e.g. a DQN
target period), so a reader sees the noise next to the figure.
"""
import os
import time

import numpy as np

from common.system import devices

WINDOW_SECONDS = 1.0
CPU_WARMUP_SECONDS = 2.0
GPU_WARMUP_SECONDS = 10.0


def warmup_seconds(asked=None, environ=os.environ):
    """The unmeasured seconds before each row's measurement: asked, else GPU_WARMUP_SECONDS
    where a GPU may compute (an NVIDIA driver, GPUs not hidden), else CPU_WARMUP_SECONDS."""
    if asked is not None:
        return asked
    gpu = devices.nvidia_driver() is not None and not devices.gpus_hidden_by_user(environ)
    return GPU_WARMUP_SECONDS if gpu else CPU_WARMUP_SECONDS


def measurement(chunks, window_seconds=WINDOW_SECONDS):
    """{'steps_per_sec', 'min', 'median', 'max', 'windows', 'seconds'} from (steps, seconds)
    chunks timed back to back; consecutive chunks are merged into windows of at least
    window_seconds; 'seconds' is the time they cover."""
    if not chunks:
        raise ValueError('no timed chunks: the measured window was empty')
    windows, steps, seconds = [], 0, 0.0
    for chunk_steps, chunk_seconds in chunks:
        steps += chunk_steps
        seconds += chunk_seconds
        if seconds >= window_seconds:
            windows.append(steps / seconds)
            steps, seconds = 0, 0.0
    if seconds > 0 and (not windows or seconds >= window_seconds / 2):
        windows.append(steps / seconds)  # a short last window would only add noise
    total_steps = sum(chunk[0] for chunk in chunks)
    total_seconds = sum(chunk[1] for chunk in chunks)
    return {'steps_per_sec': total_steps / total_seconds, 'min': float(min(windows)),
            'median': float(np.median(windows)), 'max': float(max(windows)),
            'windows': len(windows), 'seconds': total_seconds}


def rate(step_fn, steps_per_call, seconds, warmup_seconds, on_start=None):
    """Calls step_fn for warmup_seconds, then on_start() if given (e.g. to reset counters), then
    step_fn for seconds; returns measurement() of the timed calls."""
    end_warmup = time.perf_counter() + warmup_seconds
    while time.perf_counter() < end_warmup:
        step_fn()
    if on_start is not None:
        on_start()
    chunks = []
    start = time.perf_counter()
    last = start
    while last - start < seconds:
        step_fn()
        now = time.perf_counter()
        chunks.append((steps_per_call, now - last))
        last = now
    return measurement(chunks)


def counter_rate(read_count, seconds, poll, poll_seconds=0.1):
    """measurement() of a counter another thread or process advances: read_count() every
    poll_seconds for seconds, calling poll() (e.g. a health check) between reads."""
    chunks = []
    last_count, last = read_count(), time.perf_counter()
    end = last + seconds
    while last < end:
        poll()
        time.sleep(poll_seconds)
        count, now = read_count(), time.perf_counter()
        chunks.append((count - last_count, now - last))
        last_count, last = count, now
    return measurement(chunks)
