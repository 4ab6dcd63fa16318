"""The central parameter store: updates from several processes all land and are all counted,
a reader never sees a chunk half-written, a learner killed mid-update leaves whole chunks and
free locks, and the segment goes with its owner."""
import multiprocessing
import os
import signal
import threading
import time

import numpy as np
import pytest

from common.system import processes
from common.units import parameter_store
from common.units.parameter_store import ParameterStore

SIZE, CHUNKS = 1000, 4


def _add_ones(handle, count):
    store = ParameterStore.attach(handle)
    try:
        for _ in range(count):
            def update(chunk, parameters, slots):
                parameters += 1.0
                slots['mean_square'] += 2.0
            store.apply(update)
    finally:
        store.close()


def _slow_uniform_writes(handle, count):
    """Writes value k into every element of a chunk, element by element, slowly, under the
    chunk's lock: a reader outside the lock would see a mix of k - 1 and k."""
    store = ParameterStore.attach(handle)
    try:
        for value in range(1, count + 1):
            def update(chunk, parameters, slots):
                for index in range(len(parameters)):
                    parameters[index] = value
                    if index % 50 == 0:
                        time.sleep(0.0005)
            store.apply(update)
    finally:
        store.close()


def _killed_mid_update(handle, halfway):
    """Writes 7 into chunk 0, then into the first half of chunk 1, and waits there (holding
    chunk 1's lock) to be killed."""
    store = ParameterStore.attach(handle)

    def update(chunk, parameters, slots):
        if chunk.start == 0:
            parameters[:] = 7.0
            return
        parameters[:len(parameters) // 2] = 7.0
        slots['mean_square'][:] = 7.0
        halfway.set()
        time.sleep(300)

    store.apply(update)


def _start(target, *args):
    process = multiprocessing.get_context('spawn').Process(target=target, args=args)
    processes.start_process(process)
    return process


def test_updates_from_two_processes_all_land_and_are_counted():
    store = ParameterStore.create(SIZE, slots=('mean_square',), num_chunks=CHUNKS)
    try:
        learners = [_start(_add_ones, store.handle, 50) for _ in range(2)]
        for learner in learners:
            learner.join(timeout=120)
            assert learner.exitcode == 0
        assert store.updates == 100
        np.testing.assert_array_equal(store.pull(), np.full(SIZE, 100.0, np.float32))
        np.testing.assert_array_equal(store.slots['mean_square'], 200.0)
    finally:
        store.close()


def test_a_reader_never_sees_a_chunk_half_written():
    store = ParameterStore.create(SIZE, num_chunks=CHUNKS)
    try:
        writer = _start(_slow_uniform_writes, store.handle, 20)
        pulls = 0
        while writer.is_alive() or pulls == 0:
            parameters = store.pull()
            for chunk in store.chunks:
                assert len(np.unique(parameters[chunk])) == 1, 'a chunk was read mid-write'
            pulls += 1
        writer.join()
        assert writer.exitcode == 0 and pulls > 5 and store.updates == 20
        np.testing.assert_array_equal(store.pull(), 20.0)
    finally:
        store.close()


def test_a_learner_killed_mid_update_leaves_whole_chunks_and_free_locks():
    store = ParameterStore.create(SIZE, slots=('mean_square',), num_chunks=CHUNKS)
    store.parameters[:] = 1.0
    halfway = multiprocessing.get_context('spawn').Event()
    writer = _start(_killed_mid_update, store.handle, halfway)
    try:
        assert halfway.wait(120)
        os.kill(writer.pid, signal.SIGKILL)
        writer.join(timeout=10)
        # The pull waits on chunk 1's lock, finds its holder dead and frees it (in a thread:
        # without that, it would wait for ever).
        pulled = []
        reader = threading.Thread(target=lambda: pulled.append(store.pull()), daemon=True)
        reader.start()
        reader.join(timeout=10)
        assert pulled, 'the dead learner\'s lock was never freed'
        parameters = pulled[0]
        first, second = store.chunks[:2]
        assert np.all(parameters[first] == 7.0)  # the chunk the learner finished stays
        assert np.all(parameters[second.start:] == 1.0)  # the half-written one rolled back
        assert np.all(store.slots['mean_square'][second] == 0.0)
        assert store.recoveries == 1 and store.updates == 0  # the update never counted
        store.apply(lambda chunk, parameters, slots: parameters.__iadd__(1.0))  # locks free
        np.testing.assert_array_equal(store.pull()[second.start:], 2.0)
        assert store.updates == 1
    finally:
        if writer.is_alive():
            writer.kill()
        store.close()


def test_chunks_cover_the_vector_and_bad_sizes_are_named():
    store = ParameterStore.create(10, num_chunks=3)
    try:
        covered = np.concatenate([np.arange(10)[chunk] for chunk in store.chunks])
        np.testing.assert_array_equal(covered, np.arange(10))
        seen = []
        store.apply(lambda chunk, parameters, slots: seen.append((chunk.start, chunk.stop)))
        assert seen == [(chunk.start, chunk.stop) for chunk in store.chunks]
    finally:
        store.close()
    with pytest.raises(ValueError, match='num_chunks=0'):
        ParameterStore.create(10, num_chunks=0)
    with pytest.raises(ValueError, match='num_chunks=11'):
        ParameterStore.create(10, num_chunks=11)
    with pytest.raises(ValueError, match='size=0'):
        ParameterStore.create(0)


def test_the_owner_removes_the_segment():
    store = ParameterStore.create(16)
    name = store.handle.name
    assert os.path.exists(f'/dev/shm/{name}')
    store.close()
    assert not os.path.exists(f'/dev/shm/{name}')


@pytest.mark.parametrize('inside', [True, False])
def test_rmsprop_step_equals_the_tf_optimizer(inside):
    import common  # noqa: F401  pylint: disable=import-outside-toplevel
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    from common.learners import optim  # pylint: disable=import-outside-toplevel
    rng = np.random.default_rng(3)
    start = rng.normal(size=50).astype(np.float32)
    variable = tf.Variable(start)
    optimizer = optim.RMSProp(0.01, decay=0.9, epsilon=0.1, epsilon_inside_sqrt=inside,
                              initial_mean_square=1.0)
    parameters, mean_square = start.copy(), np.ones(50, np.float32)
    for _ in range(20):
        gradient = rng.normal(size=50).astype(np.float32)
        optimizer.apply_gradients([tf.constant(gradient)], [variable])
        parameter_store.rmsprop_step(parameters, mean_square, gradient, 0.01, 0.9, 0.1, inside)
    np.testing.assert_allclose(parameters, variable.numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(parameters, start)
