"""replay_files.WriteGuard: a save refuses a replay whose write is under way or was cut short."""
import pytest

from common.replay import replay_files


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
