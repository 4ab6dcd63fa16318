"""The batching predictor: one model call for all waiting requests, replies to each, clean stop."""
import queue
import time

import numpy as np
import pytest

from ga3c_tf import predictor


def _predictor(requests, calls, delivered, max_batch_size=8, predict_fn=None):
    def gather(keys):
        return np.asarray(keys, np.float32)

    def predict(inputs):
        calls.append(len(inputs))
        return inputs * 10

    def deliver(keys, outputs):
        for key, output in zip(keys, outputs):
            delivered[key] = float(output)

    return predictor.BatchingPredictor(requests, gather, predict_fn or predict, deliver,
                                       max_batch_size, poll_seconds=0.01)


def test_waiting_requests_go_into_one_call_up_to_the_batch_size(stop_when):
    requests, calls, delivered = queue.Queue(), [], {}
    for key in range(11):
        requests.put(key)
    thread = _predictor(requests, calls, delivered, max_batch_size=8)
    thread.start()
    stop_when(thread, lambda: len(delivered) >= 11)
    assert not thread.is_alive()
    assert calls == [8, 3]
    assert delivered == {key: key * 10.0 for key in range(11)}
    assert (thread.predictions, thread.batches) == (11, 2)


def test_take_waiting_returns_nothing_after_the_timeout():
    start = time.monotonic()
    assert predictor.take_waiting(queue.Queue(), 4, timeout=0.05) == []
    assert 0.04 <= time.monotonic() - start < 1.0


def test_stop_ends_an_idle_thread_promptly_and_errors_are_kept():
    thread = _predictor(queue.Queue(), [], {})
    thread.start()
    start = time.monotonic()
    thread.stop()
    thread.join(timeout=2)
    assert not thread.is_alive() and time.monotonic() - start < 1.0

    def failing(inputs):
        raise ValueError('model broke')

    requests = queue.Queue()
    requests.put(1)
    broken = _predictor(requests, [], {}, predict_fn=failing)
    broken.start()
    broken.join(timeout=2)
    assert not broken.is_alive() and 'model broke' in broken.error


def test_batch_size_must_be_positive():
    with pytest.raises(ValueError, match='max_batch_size=0'):
        _predictor(queue.Queue(), [], {}, max_batch_size=0)


def test_each_answered_request_counts_the_seconds_of_its_model_call(stop_when):
    requests, calls, delivered = queue.Queue(), [], {}

    def slow_predict(inputs):
        calls.append(len(inputs))
        time.sleep(0.05)
        return inputs

    for key in range(3):
        requests.put(key)
    thread = _predictor(requests, calls, delivered, max_batch_size=2, predict_fn=slow_predict)
    thread.start()
    stop_when(thread, lambda: len(delivered) >= 3)
    assert calls == [2, 1]
    # Calls of 2 and 1 requests, 0.05 s each: 3 request-calls of at least 0.05 s.
    assert 0.15 <= thread.request_call_seconds < 0.15 + 3 * 0.1
