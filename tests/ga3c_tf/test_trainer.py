"""The trainer thread: merges experience to a minimum batch, trains directly or via tf.data."""
import queue
import threading
import time

import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf

from ga3c_tf import trainer

SIGNATURE = (tf.TensorSpec((None, 2), tf.float32), tf.TensorSpec((None,), tf.int32))


def _item(start, length):
    return (np.arange(start, start + 2 * length, dtype=np.float32).reshape(length, 2),
            np.arange(start, start + length, dtype=np.int32))


def test_batcher_merges_items_until_the_minimum_batch_size():
    experiences = queue.Queue()
    for index in range(5):
        experiences.put(_item(index * 10, 3))
    batcher = trainer.ExperienceBatcher(experiences, min_batch_size=7, poll_seconds=0.01)
    observations, actions = batcher.next_batch(threading.Event())
    assert observations.shape == (9, 2) and list(actions) == [0, 1, 2, 10, 11, 12, 20, 21, 22]
    single = trainer.ExperienceBatcher(experiences, min_batch_size=0, poll_seconds=0.01)
    assert len(single.next_batch(threading.Event())[0]) == 3


def test_batcher_gives_none_once_stopped():
    stop = threading.Event()
    stop.set()
    assert trainer.ExperienceBatcher(queue.Queue(), 4, 0.01).next_batch(stop) is None


@pytest.mark.parametrize('use_tf_data', [False, True])
def test_trainer_trains_on_every_batch_and_stops(use_tf_data, stop_when):
    experiences, seen = queue.Queue(), []
    train_fn = tf.function(lambda observations, actions: tf.reduce_sum(actions),
                           input_signature=SIGNATURE)

    def record(observations, actions):
        seen.append(int(train_fn(observations, actions).numpy()))

    thread = trainer.TrainerThread(trainer.ExperienceBatcher(experiences, 4, 0.01), record,
                                   input_signature=SIGNATURE, use_tf_data=use_tf_data)
    thread.start()
    for index in range(6):
        experiences.put(_item(index, 2))
    stop_when(thread, lambda: thread.updates >= 3, seconds=10, join_seconds=5)
    assert not thread.is_alive() and thread.error is None
    assert seen == [0 + 1 + 1 + 2, 2 + 3 + 3 + 4, 4 + 5 + 5 + 6]
    assert (thread.updates, thread.samples) == (3, 12)
    assert train_fn.experimental_get_tracing_count() == 1


def test_tf_data_needs_a_signature():
    with pytest.raises(ValueError, match='input_signature'):
        trainer.TrainerThread(trainer.ExperienceBatcher(queue.Queue()), print, use_tf_data=True)


def test_trainer_times_its_train_calls_and_the_batch_assembly(stop_when):
    experiences = queue.Queue()
    for index in range(4):
        experiences.put(_item(index * 10, 3))
    batcher = trainer.ExperienceBatcher(experiences, min_batch_size=6, poll_seconds=0.01)
    calls = []

    def slow_train(observations, actions):
        calls.append(len(actions))
        time.sleep(0.05)

    thread = trainer.TrainerThread(batcher, slow_train)
    thread.start()
    stop_when(thread, lambda: len(calls) >= 2)
    assert calls == [6, 6] and thread.updates == 2
    assert 0.1 <= thread.update_seconds < 0.1 + 0.2
    assert 0 < batcher.assembly_seconds < thread.update_seconds  # two concatenations
