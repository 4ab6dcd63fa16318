"""Throughput of a repeated call, as the bench rows measure it: warm up, then count."""
import time


def rate(step_fn, steps_per_call, seconds, warmup_seconds):
    """Calls step_fn for warmup_seconds, then for seconds; returns measured steps per second."""
    end_warmup = time.perf_counter() + warmup_seconds
    while time.perf_counter() < end_warmup:
        step_fn()
    calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        step_fn()
        calls += 1
    return calls * steps_per_call / (time.perf_counter() - start)
