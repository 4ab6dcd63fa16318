"""A replay memory saved at a session's end and restored on resume (common/replay/memory_state.py):
round trips (of a replay not yet wrapped: only its filled positions saved), refusals, the session
boundary, and writes cut short. The files themselves are test_replay_files.py's."""
import json
import os

import numpy as np
import pytest

from common.replay import memory_state
from common.replay import prioritized_replay
from common.replay import replay
from common.replay import replay_files
from common.replay import staging as staging_lib

SHAPE = (3, 2, 4)  # (H, W, stack)


def _memory(capacity=2 * 20, seed=0, **kwargs):
    settings = dict(stack=4, num_streams=2, n_step=3, gamma=0.9)
    settings.update(kwargs)
    return replay.ReplayMemory(capacity, SHAPE, np.uint8, seed=seed, **settings)


def _fill(memory, steps, first_value=1, rng=None, writer=None, starts=True):
    """steps steps into every stream of memory (through writer, e.g. a prioritized replay over
    it): frame value first_value + step (mod 256), random rewards, terminals and episode starts;
    each stream's first step starts an episode (if starts)."""
    rng = np.random.default_rng(0) if rng is None else rng
    writer = memory if writer is None else writer  # an empty replay is falsy (len 0)
    for stream in range(memory.num_streams):
        frames = ((first_value + np.arange(steps)) % 256).astype(np.uint8)
        frames = np.broadcast_to(frames[:, None, None], (steps,) + SHAPE[:-1])
        episode_starts = rng.random(steps) < 0.1
        episode_starts[0] = starts
        actions = rng.integers(0, 5, steps).astype(np.int32)
        rewards = rng.normal(size=steps).astype(np.float32)
        terminals = rng.random(steps) < 0.05
        for start in range(0, steps, memory.stream_capacity):
            part = slice(start, start + memory.stream_capacity)
            writer.add_steps(stream, frames[part], actions[part], rewards[part],
                             terminals[part], episode_starts[part])


def _assert_batches_equal(first, second):
    for field, a, b in zip(replay.Batch._fields, first, second):
        np.testing.assert_array_equal(a, b, err_msg=field)


def _saved(memory, tmp_path, env_steps=1000):
    directory = str(tmp_path / 'replay')
    memory.save(directory, env_steps, margin_bytes=0)
    return directory


def test_a_round_trip_restores_every_array_the_cursors_counts_and_the_next_draws(tmp_path):
    memory = _memory(seed=3)
    _fill(memory, 27)                      # streams full, wrapped around (capacity 20 each)
    memory.add(0, np.full(SHAPE, 77, np.uint8), 2, 0.5, False, False)  # stream 0 one ahead
    memory.sample(5)                       # the generator moved on from its seed
    directory = _saved(memory, tmp_path)
    assert sorted(os.listdir(directory)) == sorted(
        [name + '.npy' for name in memory_state.SAVED_ARRAYS] + [replay_files.META_FILE])
    meta = json.loads((tmp_path / 'replay' / replay_files.META_FILE).read_text())
    assert (meta['env_steps'], meta['kind'], meta['settings']['stack'],
            meta['settings']['n_step'], meta['arrays']['frames']['shape']) == (
        1000, 'uniform', 4, 3, [2, 20, 3, 2])

    restored = _memory(seed=99)
    restored.restore(directory, 1000)
    for name in ('frames', 'actions', 'rewards', 'terminals', 'episode_starts', 'cursors',
                 'counts'):
        np.testing.assert_array_equal(getattr(restored, name), getattr(memory, name), name)
    assert restored.cursors.tolist() == [8, 7] and restored.counts.tolist() == [20, 20]
    # The sampling generator continues where the saved one was: the same draws, in order.
    for _ in range(3):
        _assert_batches_equal(restored.sample(16), memory.sample(16))


@pytest.mark.parametrize('kind', ['uniform', 'prioritized'])
def test_a_replay_not_yet_wrapped_saves_only_its_filled_positions_and_restores_whole(tmp_path,
                                                                                    kind):
    memory = _memory(seed=3)
    writer = (memory if kind == 'uniform'
              else prioritized_replay.PrioritizedReplay(memory, alpha=0.6, seed=5))
    _fill(memory, 9, writer=writer)        # 9 of each stream's 20 positions
    writer.add(1, np.full(SHAPE, 77, np.uint8), 2, 0.5, False, False)  # stream 1 one ahead
    directory = str(tmp_path / 'replay')
    writer.save(directory, 1000, margin_bytes=0)
    filled = int(memory.counts.max())
    frames_file = os.path.join(directory, 'frames.npy')
    assert np.load(frames_file, mmap_mode='r').shape == (2, filled, 3, 2)
    with open(frames_file, 'rb') as f:  # the data after the header: the filled positions
        np.lib.format.read_magic(f)
        np.lib.format.read_array_header_1_0(f)
        assert os.path.getsize(frames_file) - f.tell() == memory.frames[:, :filled].nbytes
    assert filled < memory.stream_capacity
    meta = json.loads((tmp_path / 'replay' / replay_files.META_FILE).read_text())
    assert meta['arrays']['frames']['shape'] == [2, filled, 3, 2]

    restored_memory = _memory(seed=99)
    restored = (restored_memory if kind == 'uniform'
                else prioritized_replay.PrioritizedReplay(restored_memory, alpha=0.6, seed=7))
    restored.restore(directory, 1000)
    for name in memory_state.STEP_ARRAYS + ('cursors', 'counts'):
        np.testing.assert_array_equal(getattr(restored_memory, name), getattr(memory, name),
                                      name)
    if kind == 'prioritized':
        np.testing.assert_array_equal(restored.sampling.tree.nodes, writer.sampling.tree.nodes)
        for _ in range(3):
            (batch, indices, weights), expected = (restored.sample(8, beta=0.5),
                                                   writer.sample(8, beta=0.5))
            _assert_batches_equal(batch, expected[0])
            np.testing.assert_array_equal(indices, expected[1])
            np.testing.assert_array_equal(weights, expected[2])
    else:
        for _ in range(3):
            _assert_batches_equal(restored.sample(16), writer.sample(16))


def test_a_save_of_every_position_restores_into_a_replay_not_yet_wrapped(tmp_path):
    """What saves wrote before they stopped at the filled positions: the whole capacity."""
    memory = _memory(seed=3)
    _fill(memory, 9)
    arrays, meta = memory_state.saved_state(memory, 1000, 'uniform')
    for name in memory_state.STEP_ARRAYS:
        arrays[name] = getattr(memory, name)
        meta['arrays'][name]['shape'] = list(arrays[name].shape)
    directory = str(tmp_path / 'replay')
    replay_files.write_directory(directory, arrays, meta, margin_bytes=0)
    assert np.load(os.path.join(directory, 'frames.npy'), mmap_mode='r').shape == (2, 20, 3, 2)
    restored = _memory(seed=99)
    restored.restore(directory, 1000)
    for name in memory_state.STEP_ARRAYS + ('cursors', 'counts'):
        np.testing.assert_array_equal(getattr(restored, name), getattr(memory, name), name)
    _assert_batches_equal(restored.sample(16), memory.sample(16))


def test_a_prioritized_round_trip_restores_the_priorities_their_maximum_and_draws(tmp_path):
    prioritized = prioritized_replay.PrioritizedReplay(_memory(seed=1), alpha=0.6, seed=5)
    _fill(prioritized.memory, 25, writer=prioritized)
    _, indices, _ = prioritized.sample(8, beta=0.5)
    prioritized.update_priorities(indices, np.linspace(0.5, 3.0, 8))
    directory = _saved(prioritized, tmp_path, env_steps=640)

    restored = prioritized_replay.PrioritizedReplay(_memory(seed=7), alpha=0.6, seed=8)
    restored.restore(directory, 640)
    np.testing.assert_array_equal(restored.sampling.tree.nodes, prioritized.sampling.tree.nodes)
    assert restored.sampling.max_priority == prioritized.sampling.max_priority > 1.0
    for _ in range(3):
        batch, indices, weights = restored.sample(8, beta=0.5)
        expected_batch, expected_indices, expected_weights = prioritized.sample(8, beta=0.5)
        _assert_batches_equal(batch, expected_batch)
        np.testing.assert_array_equal(indices, expected_indices)
        np.testing.assert_array_equal(weights, expected_weights)


@pytest.mark.parametrize('other, step, named', [
    ({}, 999, 'holds the replay of step 1,000; the checkpoint resumed from is at step 999'),
    ({'stack': 2}, 1000, 'saved with stack=4; this run\'s replay has stack=2'),
    ({'num_streams': 4, 'capacity': 80}, 1000, 'saved with capacity=40'),
    ({'n_step': 1}, 1000, 'saved with n_step=3; this run\'s replay has n_step=1'),
])
def test_a_replay_of_another_step_or_settings_is_refused_and_the_memory_stays_empty(
        tmp_path, other, step, named):
    memory = _memory()
    _fill(memory, 12)
    directory = _saved(memory, tmp_path)
    other = dict(other)
    shape = SHAPE[:-1] + (other.get('stack', 4),)
    capacity = other.pop('capacity', 40)
    settings = dict(stack=4, num_streams=2, n_step=3)
    settings.update(other)
    target = replay.ReplayMemory(capacity, shape, np.uint8, **settings)
    with pytest.raises(replay_files.ReplayFileError, match='^[^\n]+$') as raised:
        target.restore(directory, step)
    assert named in str(raised.value)
    assert len(target) == 0


def test_uniform_and_prioritized_saves_are_not_mixed_nor_another_alpha(tmp_path):
    memory = _memory()
    _fill(memory, 12)
    directory = _saved(memory, tmp_path)
    prioritized = prioritized_replay.PrioritizedReplay(_memory(), alpha=0.6)
    with pytest.raises(replay_files.ReplayFileError, match="holds a uniform replay; this run's "
                                                           'is prioritized'):
        prioritized.restore(directory, 1000)
    _fill(prioritized.memory, 12, writer=prioritized)
    directory = _saved(prioritized, tmp_path)
    other_alpha = prioritized_replay.PrioritizedReplay(_memory(), alpha=0.5)
    with pytest.raises(replay_files.ReplayFileError, match="saved with alpha=0.6; this run's "
                                                           'prioritized replay has alpha=0.5'):
        other_alpha.restore(directory, 1000)
    assert len(other_alpha) == 0 and other_alpha.sampling.tree.total == 0


@pytest.mark.parametrize('damage, named', [
    ('truncate_frames', 'frames.npy is missing or damaged'),
    ('remove_actions', 'actions.npy is missing or damaged'),
    ('garble_meta', 'replay.json is damaged'),
    ('remove_meta', 'replay.json is missing'),
    ('bad_counts', 'holds cursors'),
])
def test_a_damaged_save_is_refused_in_one_line_and_the_run_refills(tmp_path, capsys, damage,
                                                                   named):
    memory = _memory()
    _fill(memory, 25)
    directory = _saved(memory, tmp_path)
    path = lambda name: os.path.join(directory, name)  # noqa: E731
    if damage == 'truncate_frames':
        with open(path('frames.npy'), 'r+b') as f:
            f.truncate(os.path.getsize(path('frames.npy')) - 10)
    elif damage == 'remove_actions':
        os.remove(path('actions.npy'))
    elif damage == 'garble_meta':
        with open(path(replay_files.META_FILE), 'w') as f:
            f.write('{"format": 1, "kind"')
    elif damage == 'remove_meta':
        os.remove(path(replay_files.META_FILE))
    else:
        np.save(path('counts.npy'), np.array([5, 25], np.int64))
    target = _memory()
    assert not replay_files.restore_for_resume(target, str(tmp_path), 1000)
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith('replay memory is refilled: ') and named in line, line
    assert len(target) == 0


def test_a_restore_cut_short_leaves_the_replay_empty_and_the_save_is_kept(tmp_path, capsys,
                                                                           monkeypatch):
    """Ctrl-C while the frames are read back: the replay is empty, and the session's end does
    not replace the good save with it."""
    memory = _memory()
    _fill(memory, 25)
    directory = _saved(memory, tmp_path)
    copy = replay_files.copy_array_into

    def interrupted_copy(directory, name, target, chunk_bytes=replay_files.CHUNK_BYTES):
        copy(directory, name, target, chunk_bytes)
        raise KeyboardInterrupt

    monkeypatch.setattr(replay_files, 'copy_array_into', interrupted_copy)
    target = _memory()
    with pytest.raises(KeyboardInterrupt):
        target.restore(directory, 1000)
    assert len(target) == 0 and target.dangling.size == 0
    assert replay_files.save_for_resume(target, str(tmp_path), 1000, margin_bytes=0) is None
    assert capsys.readouterr().out == 'replay not saved: replay holds no steps\n'
    monkeypatch.setattr(replay_files, 'copy_array_into', copy)
    restored = _memory()
    restored.restore(directory, 1000)
    np.testing.assert_array_equal(restored.frames, memory.frames)


def _session(value):
    return 1 if value < 100 else 2


def test_no_sampled_transition_spans_the_session_boundary(tmp_path):
    """Session 1 stores frames 1-30 (rewards 0) and stops mid-episode; session 2, restored,
    stores frames 101-106 (rewards 1000) and its writer does not mark an episode start: the
    replay does. No stack, next state or n-step return mixes the two sessions."""
    memory = _memory(capacity=2 * 40, n_step=3, gamma=1.0)
    for stream in range(2):
        memory.add_steps(stream, np.broadcast_to(np.arange(1, 31, dtype=np.uint8)[:, None, None],
                                                 (30, 3, 2)),
                         np.zeros(30, np.int32), np.zeros(30, np.float32), np.zeros(30, bool),
                         np.arange(30) % 10 == 0)
    directory = _saved(memory, tmp_path)
    restored = _memory(capacity=2 * 40, n_step=3, gamma=1.0)
    restored.restore(directory, 1000)
    # Before any new step, the last 3 steps of each stream (27-29) are dangling, not drawable.
    assert restored.dangling.tolist() == [27, 28, 29, 67, 68, 69]
    for stream in range(2):
        restored.add_steps(stream, np.broadcast_to(
            np.arange(101, 107, dtype=np.uint8)[:, None, None], (6, 3, 2)),
            np.ones(6, np.int32), np.full(6, 1000, np.float32), np.zeros(6, bool),
            np.zeros(6, bool))
        assert restored.episode_starts[stream, 30] and not restored.episode_starts[stream, 31]
    batch = restored.sample(3000)
    sessions_seen = set()
    for observation, next_observation, reward in zip(batch.observations,
                                                     batch.next_observations, batch.rewards):
        frames = {_session(v) for v in observation[0, 0] if v}
        next_frames = {_session(v) for v in next_observation[0, 0] if v}
        assert len(frames) == 1 and frames == next_frames, (observation[0, 0],
                                                           next_observation[0, 0])
        (session,) = frames
        assert reward == (0.0 if session == 1 else 3000.0)  # 3 steps of one session
        sessions_seen.add(session)
    assert sessions_seen == {1, 2}
    # The dangling steps are drawable again once overwritten (the stream wraps around).
    for stream in range(2):
        restored.add_steps(stream, np.full((40, 3, 2), 150, np.uint8), np.ones(40, np.int32),
                           np.zeros(40, np.float32), np.zeros(40, bool), np.zeros(40, bool))
    assert restored.dangling.size == 0


def test_prioritized_replay_never_prioritizes_the_steps_left_at_the_boundary(tmp_path):
    prioritized = prioritized_replay.PrioritizedReplay(_memory(capacity=2 * 40, n_step=3),
                                                       alpha=0.6)
    _fill(prioritized.memory, 20, writer=prioritized)
    directory = _saved(prioritized, tmp_path)
    restored = prioritized_replay.PrioritizedReplay(_memory(capacity=2 * 40, n_step=3),
                                                    alpha=0.6)
    restored.restore(directory, 1000)
    _fill(restored.memory, 8, first_value=101, writer=restored, starts=False)
    dangling = restored.memory.dangling
    assert dangling.tolist() == [17, 18, 19, 57, 58, 59]
    assert not restored.sampling.tree.get(dangling).any()
    # Exactly the steps the uniform replay could draw carry a priority.
    memory = restored.memory
    valid = memory.valid_counts()
    items = np.arange(memory.capacity)
    drawable = memory._is_valid(*np.divmod(items, memory.stream_capacity), valid) & \
        ~np.isin(items, dangling)
    np.testing.assert_array_equal(restored.sampling.tree.get(items) > 0, drawable)


def test_a_write_cut_short_by_an_interrupt_is_never_saved(tmp_path):
    class Interrupting:
        """An array whose copy into replay is interrupted, as Ctrl-C inside a write would."""
        def __getitem__(self, index):
            return self

        def __array__(self, dtype=None, copy=None):
            raise KeyboardInterrupt

    memory = _memory()
    _fill(memory, 12)
    staging = staging_lib.StagingBuffer(8, SHAPE[:-1], np.uint8)
    for value in range(3):
        staging.add(np.full(SHAPE[:-1], value, np.uint8), 0, 0.0, False, False)
    staging.episode_starts = Interrupting()
    with pytest.raises(KeyboardInterrupt):
        staging.flush_into(memory, 0)
    assert staging.size == 0  # never flushed twice
    with pytest.raises(replay_files.ReplayFileError, match='cut short'):
        memory.save(str(tmp_path / 'replay'), 10, margin_bytes=0)
    assert not os.listdir(tmp_path)


def test_a_prioritized_write_cut_short_is_never_saved_until_the_replay_is_cleared(tmp_path):
    """An interrupt between the steps' write and their priorities' refresh: the prioritized
    replay (whose own guard covers both) refuses its save; cleared, it saves again."""
    prioritized = prioritized_replay.PrioritizedReplay(_memory(seed=1), alpha=0.6, seed=5)
    _fill(prioritized.memory, 12, writer=prioritized)

    def interrupted_refresh(*args):
        raise KeyboardInterrupt

    prioritized._refresh = interrupted_refresh  # pylint: disable=protected-access
    with pytest.raises(KeyboardInterrupt):
        _fill(prioritized.memory, 1, writer=prioritized)
    assert not prioritized.memory.writes.cut_short  # the steps themselves were written whole
    with pytest.raises(replay_files.ReplayFileError, match='priorities would not match'):
        _saved(prioritized, tmp_path)
    del prioritized._refresh
    prioritized.memory.clear()
    prioritized.writes.reset()
    _fill(prioritized.memory, 12, writer=prioritized)
    assert replay_files.read_meta(_saved(prioritized, tmp_path))['env_steps'] == 1000
