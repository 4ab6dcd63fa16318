"""common/replay/replay_files.py: the write guard, a save replacing the one before it and a killed
save's leftovers removed, a full disk (a save skipped or replacing the previous one, a failed
write's partial files removed), and the run's session-end save and resume."""
import os

import numpy as np
import pytest

from common.replay import replay
from common.replay import replay_files


def _memory(steps=12, value=1, capacity=2 * 20, shape=(3, 2, 4)):
    """A ReplayMemory of two streams holding steps steps each of frames value, value + 1, ..."""
    memory = replay.ReplayMemory(capacity, shape, np.uint8, stack=shape[-1], num_streams=2)
    _add(memory, steps, value)
    return memory


def _add(memory, steps, value):
    frames = ((value + np.arange(steps)) % 256).astype(np.uint8)
    frames = np.broadcast_to(frames[:, None, None], (steps,) + memory.frames.shape[2:])
    for stream in range(memory.num_streams):
        memory.add_steps(stream, frames, np.zeros(steps, np.int32), np.zeros(steps, np.float32),
                         np.zeros(steps, bool), np.arange(steps) == 0)


def test_the_write_guard_marks_a_write_begun_before_the_last_one_ended():
    guard = replay_files.WriteGuard()
    guard.begin()
    guard.end()
    guard.refuse_save('unused')  # whole: no error
    guard.begin()
    with pytest.raises(replay_files.ReplayFileError, match='half a step'):
        guard.refuse_save('a save would hold half a step')
    guard.begin()  # the one before never ended
    guard.end()
    assert guard.cut_short
    with pytest.raises(replay_files.ReplayFileError, match='cut short'):
        guard.refuse_save('x')
    guard.reset()
    guard.refuse_save('unused')


def test_no_saved_replay_says_the_run_refills(tmp_path, capsys):
    assert not replay_files.restore_for_resume(_memory(), str(tmp_path), 10)
    assert capsys.readouterr().out.startswith('replay memory is refilled: no saved replay in ')


def test_a_new_save_replaces_the_old_one_and_a_killed_saves_leftovers_go(tmp_path):
    memory = _memory()
    directory = str(tmp_path / 'replay')
    memory.save(directory, 100, margin_bytes=0)
    leftover = tmp_path / f'replay{replay_files.TEMP_MARK}12345'
    leftover.mkdir()
    (leftover / 'frames.npy').write_bytes(b'half')
    _add(memory, 5, 50)
    memory.save(directory, 200, margin_bytes=0)
    assert sorted(os.listdir(tmp_path)) == ['replay']
    assert replay_files.read_meta(directory)['env_steps'] == 200
    restored = _memory(steps=0)
    restored.restore(directory, 200)
    np.testing.assert_array_equal(restored.frames, memory.frames)


def test_a_save_that_does_not_fit_is_skipped_and_the_previous_one_stays(small_disk, capsys):
    disk = small_disk('2m')
    small = _memory()
    replay_files.save_for_resume(small, disk, 100, margin_bytes=0)
    assert 'replay saved to' in capsys.readouterr().out
    big = _memory(steps=2000, capacity=2 * 2000, shape=(32, 32, 4))
    assert replay_files.save_for_resume(big, disk, 200, margin_bytes=0) is None
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith('replay not saved: ') and 'would not fit in' in line
    assert f'{os.path.join(disk, "replay")} stays as it was' in line
    assert sorted(os.listdir(disk)) == ['replay']
    restored = _memory(steps=0)
    assert replay_files.restore_for_resume(restored, disk, 100)
    np.testing.assert_array_equal(restored.frames, small.frames)


def test_a_failed_write_removes_its_partial_files_and_names_the_cause(small_disk, monkeypatch,
                                                                     capsys):
    disk = small_disk('2m')
    replay_files.save_for_resume(_memory(), disk, 100, margin_bytes=0)
    capsys.readouterr()
    big = _memory(steps=2000, capacity=2 * 2000, shape=(32, 32, 4))
    # The free-space check passes (as when another writer fills the disk meanwhile): the write
    # itself meets the full disk.
    monkeypatch.setattr(replay_files, 'free_bytes', lambda path: 10 ** 12)
    assert replay_files.save_for_resume(big, disk, 200, margin_bytes=0) is None
    (line,) = capsys.readouterr().out.splitlines()
    partial = os.path.join(disk, f'replay{replay_files.TEMP_MARK}{os.getpid()}', 'frames.npy')
    assert line.startswith(f'replay not saved: cannot write {partial}: '
                           'No space left on device'), line
    assert 'the partial files were removed' in line and 'replay stays as it was' in line
    assert sorted(os.listdir(disk)) == ['replay']
    assert replay_files.restore_for_resume(_memory(steps=0), disk, 100)


def test_a_save_that_fits_only_without_the_previous_one_replaces_it(small_disk, capsys):
    disk = small_disk('2m')
    settings = dict(steps=1000, capacity=2 * 1000, shape=(24, 24, 4))
    replay_files.save_for_resume(_memory(value=1, **settings), disk, 100, margin_bytes=0)
    assert 'replay saved to' in capsys.readouterr().out
    second = _memory(value=2, **settings)
    assert replay_files.save_for_resume(second, disk, 200, margin_bytes=0)
    assert 'the previous save was removed first: no room for both' in capsys.readouterr().out
    restored = _memory(**{**settings, 'steps': 0})
    restored.restore(os.path.join(disk, 'replay'), 200)
    np.testing.assert_array_equal(restored.frames, second.frames)
