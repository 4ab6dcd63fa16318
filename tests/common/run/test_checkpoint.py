"""Checkpoints that cannot silently restart: fallbacks, write-then-publish, pruning."""
import os

import numpy as np
import pytest
import tensorflow as tf

from common.run import checkpoint


def _state():
    return tf.Variable(np.zeros(1000, np.float32), name='weights')


def _save_steps(run_dir, steps, max_to_keep=3):
    """Saves a checkpoint at each of steps, the weights all equal to the step number."""
    weights = _state()
    saver = checkpoint.Checkpointer(run_dir, max_to_keep=max_to_keep, weights=weights)
    for step in steps:
        weights.assign(np.full(1000, step, np.float32))
        saver.save(step)
    return saver


def _restore(run_dir):
    weights = _state()
    prefix = checkpoint.Checkpointer(run_dir, weights=weights).restore()
    return prefix, float(weights.numpy()[0])


def _data_file(prefix):
    directory, name = os.path.split(prefix)
    return os.path.join(directory, next(entry for entry in os.listdir(directory)
                                        if entry.startswith(name + '.data-')))


def _snapshot(directory):
    return {name: (os.path.getsize(os.path.join(directory, name)),
                   os.path.getmtime(os.path.join(directory, name)))
            for name in sorted(os.listdir(directory))}


def test_restore_takes_the_newest_and_keeps_the_newest_three(tmp_path):
    _save_steps(str(tmp_path), [100, 200, 300, 400])
    prefix, value = _restore(str(tmp_path))
    assert prefix.endswith('ckpt-400') and value == 400
    directory = tmp_path / 'checkpoints'
    assert [os.path.basename(p) for p in checkpoint.on_disk(str(directory))] == [
        'ckpt-400', 'ckpt-300', 'ckpt-200']
    assert tf.train.latest_checkpoint(str(directory)).endswith('ckpt-400')


def test_a_missing_index_falls_back_to_the_newest_file_and_says_so(tmp_path, capsys):
    _save_steps(str(tmp_path), [100, 200])
    os.remove(tmp_path / 'checkpoints' / 'checkpoint')
    prefix, value = _restore(str(tmp_path))
    assert prefix.endswith('ckpt-200') and value == 200
    warnings = capsys.readouterr().err.strip().splitlines()
    assert len(warnings) == 1 and 'missing or unreadable' in warnings[0]


def test_a_damaged_index_falls_back_too(tmp_path, capsys):
    _save_steps(str(tmp_path), [100, 200])
    (tmp_path / 'checkpoints' / 'checkpoint').write_bytes(os.urandom(64))
    prefix, value = _restore(str(tmp_path))
    assert prefix.endswith('ckpt-200') and value == 200
    assert 'missing or unreadable' in capsys.readouterr().err


@pytest.mark.parametrize('damage', ['truncate', 'random_bytes'])
def test_a_damaged_newest_checkpoint_falls_back_to_the_previous(tmp_path, capsys, damage):
    _save_steps(str(tmp_path), [100, 200, 300])
    data = _data_file(str(tmp_path / 'checkpoints' / 'ckpt-300'))
    size = os.path.getsize(data)
    with open(data, 'r+b') as f:
        if damage == 'truncate':
            f.truncate(size // 2)
        else:
            f.write(os.urandom(size))
    prefix, value = _restore(str(tmp_path))
    assert prefix.endswith('ckpt-200') and value == 200
    warnings = capsys.readouterr().err.strip().splitlines()
    assert len(warnings) == 1 and 'skipping damaged checkpoint' in warnings[0]
    assert 'ckpt-300' in warnings[0]


def test_no_readable_checkpoint_stops_and_changes_nothing(tmp_path):
    _save_steps(str(tmp_path), [100, 200])
    directory = tmp_path / 'checkpoints'
    for step in (100, 200):
        with open(_data_file(str(directory / f'ckpt-{step}')), 'r+b') as f:
            f.truncate(10)
    before = _snapshot(str(directory))
    with pytest.raises(checkpoint.CheckpointError, match='no readable checkpoint in .*checkpoints'):
        _restore(str(tmp_path))
    assert _snapshot(str(directory)) == before


def test_an_empty_run_restores_nothing(tmp_path):
    assert _restore(str(tmp_path)) == (None, 0.0)


def test_a_failed_write_leaves_the_index_on_the_previous_checkpoint(tmp_path, monkeypatch):
    saver = _save_steps(str(tmp_path), [100])

    def write_fails(prefix):
        with open(prefix + '.index', 'wb') as f:  # a partial file, as a full disk leaves
            f.write(b'\0' * 10)
        raise tf.errors.ResourceExhaustedError(None, None, 'No space left on device')

    monkeypatch.setattr(saver.checkpoint, 'write', write_fails)
    with pytest.raises(checkpoint.CheckpointError, match='could not write .*ckpt-200') as error:
        saver.save(200)
    assert 'No space left on device' in str(error.value)
    assert str(error.value).endswith(f"the newest checkpoint is still {tmp_path}/checkpoints/"
                                     'ckpt-100')
    directory = str(tmp_path / 'checkpoints')
    assert not any(name.startswith('ckpt-200') for name in os.listdir(directory))  # removed
    assert tf.train.latest_checkpoint(directory).endswith('ckpt-100')
    prefix, value = _restore(str(tmp_path))
    assert prefix.endswith('ckpt-100') and value == 100


def test_a_checkpoint_that_does_not_read_back_is_not_published(tmp_path, monkeypatch):
    saver = _save_steps(str(tmp_path), [100])
    real_write = saver.checkpoint.write

    def write_then_damage(prefix):
        path = real_write(prefix)
        with open(_data_file(path), 'r+b') as f:
            f.truncate(100)
        return path

    monkeypatch.setattr(saver.checkpoint, 'write', write_then_damage)
    with pytest.raises(checkpoint.CheckpointError, match='did not read back'):
        saver.save(200)
    assert tf.train.latest_checkpoint(str(tmp_path / 'checkpoints')).endswith('ckpt-100')


def test_after_a_fallback_past_a_damaged_checkpoint_the_rotation_removes_it(tmp_path, capsys):
    """Resumed from ckpt-100 past a damaged ckpt-900: the first save after it removes the
    damaged files (with a line), and the rotation goes on from ckpt-100."""
    _save_steps(str(tmp_path), [100, 900])
    directory = tmp_path / 'checkpoints'
    with open(_data_file(str(directory / 'ckpt-900')), 'r+b') as f:
        f.truncate(10)
    weights = _state()
    saver = checkpoint.Checkpointer(str(tmp_path), max_to_keep=2, weights=weights)
    assert saver.restore().endswith('ckpt-100')
    capsys.readouterr()
    for step in (150, 250, 350):
        weights.assign(np.full(1000, step, np.float32))
        saver.save(step)
    assert [os.path.basename(p) for p in checkpoint.on_disk(str(directory))] == [
        'ckpt-350', 'ckpt-250']
    assert not any(name.startswith('ckpt-900') for name in os.listdir(directory))
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and 'removed damaged checkpoint' in lines[0] and 'ckpt-900' in lines[0]
    assert _restore(str(tmp_path)) == (str(directory / 'ckpt-350'), 350.0)
    assert capsys.readouterr().err == ''  # nothing left to skip


def test_after_a_fallback_from_a_missing_index_the_rotation_prunes_the_unlisted(tmp_path):
    _save_steps(str(tmp_path), [100, 200, 300], max_to_keep=3)
    directory = tmp_path / 'checkpoints'
    os.remove(directory / 'checkpoint')
    weights = _state()
    saver = checkpoint.Checkpointer(str(tmp_path), max_to_keep=3, weights=weights)
    assert saver.restore().endswith('ckpt-300')
    for step in (400, 500):
        weights.assign(np.full(1000, step, np.float32))
        saver.save(step)
    assert [os.path.basename(p) for p in checkpoint.on_disk(str(directory))] == [
        'ckpt-500', 'ckpt-400', 'ckpt-300']
    assert tf.train.get_checkpoint_state(str(directory)).all_model_checkpoint_paths[:] == [
        str(directory / name) for name in ('ckpt-300', 'ckpt-400', 'ckpt-500')]


def test_the_index_names_checkpoints_relative_to_its_directory(tmp_path):
    """A moved run directory still finds its checkpoints."""
    _save_steps(str(tmp_path / 'run'), [100, 200])
    os.rename(tmp_path / 'run', tmp_path / 'moved')
    assert _restore(str(tmp_path / 'moved')) == (str(tmp_path / 'moved' / 'checkpoints' /
                                                     'ckpt-200'), 200.0)
    assert '/' not in (tmp_path / 'moved' / 'checkpoints' / 'checkpoint').read_text()


def test_a_checkpoint_of_another_model_is_named(tmp_path):
    _save_steps(str(tmp_path), [100])
    other = tf.Variable(np.zeros(7, np.float32))
    with pytest.raises(checkpoint.CheckpointError, match='does not fit this configuration'):
        checkpoint.Checkpointer(str(tmp_path), weights=other).restore()


def test_a_full_disk_names_its_cause_and_leaves_no_partial_files(small_disk):
    """A real full file system (a 256 KiB tmpfs): TF's SaveV2 error, decorations and all, becomes
    the path and 'No space left on device'; the partial ckpt-*_temp that would keep the disk
    full is removed."""
    run_dir = os.path.join(small_disk('256k'), 'run')
    big = tf.Variable(tf.zeros([200_000]))  # 800 KB: does not fit
    saver = checkpoint.Checkpointer(run_dir, weights=big)
    with pytest.raises(checkpoint.CheckpointError) as error:
        saver.save(10)
    message = str(error.value)
    assert 'ckpt-10' in message and 'No space left on device' in message
    assert '{{function_node' not in message and '[Op:' not in message
    assert message.endswith('the run has no earlier checkpoint')
    assert os.listdir(os.path.join(run_dir, 'checkpoints')) == []


def test_the_first_checkpoint_dropped_in_each_milestone_span_stays(tmp_path):
    """Every 10 steps a milestone: of the checkpoints the rotation (2 kept) drops, 10 and 20
    stay; a resumed run keeps them, and falls back to them when the kept ones are damaged."""
    weights = _state()
    saver = checkpoint.Checkpointer(str(tmp_path), max_to_keep=2, milestone_every_steps=10,
                                    weights=weights)
    for step in (5, 10, 12, 15, 21, 24, 27):
        weights.assign(np.full(1000, step, np.float32))
        saver.save(step)
    directory = str(tmp_path / 'checkpoints')
    assert [os.path.basename(prefix) for prefix in checkpoint.on_disk(directory)] == [
        'ckpt-27', 'ckpt-24', 'ckpt-21', 'ckpt-10']
    resumed = checkpoint.Checkpointer(str(tmp_path), max_to_keep=2, milestone_every_steps=10,
                                      weights=_state())
    assert resumed.restore().endswith('ckpt-27')
    resumed.save(33)  # drops 24 (21 is span 2's milestone already)
    assert [os.path.basename(prefix) for prefix in checkpoint.on_disk(directory)] == [
        'ckpt-33', 'ckpt-27', 'ckpt-21', 'ckpt-10']
    for prefix in ('ckpt-33', 'ckpt-27'):
        with open(_data_file(os.path.join(directory, prefix)), 'r+b') as f:
            f.truncate(10)
    prefix, value = _restore(str(tmp_path))
    assert prefix.endswith('ckpt-21') and value == 21
