"""Threaded batching predictor (GA3C's): take as many requests as are waiting, one model call.

A request is a small key (e.g. an agent's slot); the caller supplies how keys become a model input
(gather_fn), the model call (predict_fn, a tf.function with a None batch dimension) and how
results go back to whoever waits on each key (deliver_fn). Requests come from a queue.Queue-like
object (get, get_nowait) or from anything with take_waiting(max_items, timeout), such as
ga3c_tf.ipc.RequestPipe, which takes every waiting key in one read.
"""
import queue as queue_lib
import threading
import time
import traceback


def take_waiting(requests, max_items, timeout):
    """Blocks up to timeout for one item, then takes whatever else is waiting, up to max_items."""
    if hasattr(requests, 'take_waiting'):
        return requests.take_waiting(max_items, timeout)
    try:
        items = [requests.get(timeout=timeout)]
    except queue_lib.Empty:
        return []
    while len(items) < max_items:
        try:
            items.append(requests.get_nowait())
        except queue_lib.Empty:
            break
    return items


class BatchingPredictor(threading.Thread):
    """A thread batching waiting requests into one predict_fn call and handing results back."""

    def __init__(self, requests, gather_fn, predict_fn, deliver_fn, max_batch_size,
                 poll_seconds=0.05, name='predictor'):
        super().__init__(name=name, daemon=True)
        if max_batch_size < 1:
            raise ValueError(f'max_batch_size={max_batch_size!r}; must be >= 1')
        self.requests = requests
        self.gather_fn = gather_fn
        self.predict_fn = predict_fn
        self.deliver_fn = deliver_fn
        self.max_batch_size = max_batch_size
        self.poll_seconds = poll_seconds
        self.stop_event = threading.Event()
        self.predictions = 0   # requests answered so far
        self.batches = 0       # predict_fn calls so far
        self.request_call_seconds = 0.0  # per answered request, the seconds of its predict_fn call
        self.error = None      # traceback text if the thread died of an exception

    def run(self):
        try:
            while not self.stop_event.is_set():
                keys = take_waiting(self.requests, self.max_batch_size, self.poll_seconds)
                if not keys:
                    continue
                inputs = self.gather_fn(keys)
                start = time.perf_counter()
                outputs = self.predict_fn(inputs)
                self.request_call_seconds += (time.perf_counter() - start) * len(keys)
                self.deliver_fn(keys, outputs)
                self.predictions += len(keys)
                self.batches += 1
        except Exception:  # pylint: disable=broad-except
            self.error = traceback.format_exc()

    def stop(self):
        """Asks the thread to end; it does within poll_seconds plus one model call."""
        self.stop_event.set()
