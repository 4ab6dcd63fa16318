"""A carried run (common/run/carry.py, python -m common.carry): every checkpoint tensor back bit
for bit in a new run directory, the next update equal to a resume in place's, a target network
equal to the online one stored once, and a missing or damaged file or another run refused in
one line before anything is written."""
import io
import json
import os
import shutil
import subprocess
import sys

import common  # noqa: F401
import numpy as np
import pytest
import tensorflow as tf

from common.launch import app
from common.run import carry
from common.run import checkpoint as checkpoint_lib
from common.run import run_lock
from common.run import run_record
from common.run import tracker as tracker_lib
from common.system import errors
from common.tools import run_files

IDENTITY = {'paper': 'test', 'env': 'CartPole-v1', 'observation_shape': [4], 'num_actions': 2,
            'network': 'mlp'}
BATCH = np.random.default_rng(3).normal(size=(16, 4)).astype(np.float32)
TARGETS = np.random.default_rng(4).normal(size=(16, 2)).astype(np.float32)


def _modules(seed=0):
    """A Q-learner's shape: online and target networks, Adam (two slots per variable), a
    generator."""
    tf.keras.utils.set_random_seed(seed)
    online = tf.keras.Sequential([tf.keras.layers.Dense(32, activation='relu', input_shape=(4,)),
                                  tf.keras.layers.Dense(2)])
    target = tf.keras.models.clone_model(online)
    optimizer = tf.keras.optimizers.Adam(1e-2)
    optimizer.build(online.trainable_variables)
    generator = tf.random.Generator.from_seed(seed)
    return {'online': online, 'target': target, 'optimizer': optimizer, 'generator': generator}


def _update(modules):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((modules['online'](BATCH) - TARGETS) ** 2)
    variables = modules['online'].trainable_variables
    modules['optimizer'].apply_gradients(zip(tape.gradient(loss, variables), variables))
    modules['generator'].normal([3])


def _tracker(run_dir, modules):
    return tracker_lib.RunTracker(run_dir, total_steps=10 ** 6, log_every_seconds=1e-6,
                                  checkpoint_every_steps=10 ** 6, trackables=modules,
                                  stream=io.StringIO())


def _make_run(run_dir, target_equal=False, updates=3):
    """A run of `updates` updates and 100 steps each, saved; its target network a copy of the
    online one (target_equal) or an older state of it."""
    app.prepare_run_dir(run_dir, {'paper': 'test', 'gin_files': [], 'gin_bindings': []},
                        IDENTITY)
    modules = _modules()
    tracker = _tracker(run_dir, modules)
    for _ in range(updates):
        _update(modules)
        tracker.add_steps(100, updates=1)
        tracker.add_episodes([(12.0, 40)])
        tracker.log_interval(updates=1)
    if target_equal:
        modules['target'].set_weights(modules['online'].get_weights())
    tracker.save()
    tracker.close()
    run_lock.release(run_dir)
    return modules


def _tensors(prefix):
    reader = tf.train.load_checkpoint(prefix)
    return {key: reader.get_tensor(key) for key in reader.get_variable_to_shape_map()}


def _carried(tmp_path, **kwargs):
    source, folder, target = (str(tmp_path / name) for name in ('source', 'carried', 'target'))
    _make_run(source, **kwargs)
    manifest = carry.write(source, folder)
    return source, folder, target, manifest


def test_every_tensor_comes_back_bit_for_bit_and_the_next_update_equals_a_resume_in_place(
        tmp_path):
    source, folder, target, manifest = _carried(tmp_path)
    checked = carry.check(folder, IDENTITY)
    assert checked == manifest and manifest['env_steps'] == 300
    prefix = carry.materialize(folder, target, checked)
    assert prefix == os.path.join(target, 'checkpoints', 'ckpt-300')
    original = _tensors(checkpoint_lib.first_readable(os.path.join(source, 'checkpoints')))
    written = _tensors(prefix)
    assert sorted(original) == sorted(written)
    for key, value in original.items():
        assert np.asarray(value).dtype == np.asarray(written[key]).dtype, key
        assert np.array_equal(value, written[key]), key
    # Adam's slots are among them (two per variable), and the generator's state.
    assert sum(key.startswith('optimizer/_variables/') for key in original) == 2 * 4
    assert any(key.startswith('generator/') for key in original)

    in_place, carried = _modules(seed=1), _modules(seed=2)  # other initial values
    assert _tracker(source, in_place).env_steps == 300
    moved = _tracker(target, carried)
    assert moved.env_steps == 300 and moved.episodes == 3
    assert moved.session_start == 'resumed'  # no session record says it was carried
    for modules in (in_place, carried):
        _update(modules)
    for name in ('online', 'target', 'optimizer'):
        for mine, theirs in zip(in_place[name].variables, carried[name].variables):
            assert np.array_equal(mine.numpy(), theirs.numpy()), (name, mine.name)
    assert np.array_equal(in_place['generator'].state.numpy(), carried['generator'].state.numpy())
    # The records came along: metrics.csv, episodes.csv, run.json, invocation.json.
    for name in ('metrics.csv', 'episodes.csv', 'run.json', 'invocation.json'):
        with open(os.path.join(source, name)) as mine, open(os.path.join(target, name)) as theirs:
            assert mine.read() == theirs.read(), name


def test_a_target_network_equal_to_the_online_one_is_stored_once(tmp_path):
    _, _, _, apart = _carried(tmp_path / 'apart')
    _, folder, target, same = _carried(tmp_path / 'same', target_equal=True)
    shared = {key: entry['same_as'] for key, entry in same['tensors'].items()
              if 'same_as' in entry and key.startswith('target/')}
    assert len(shared) == 4 and all(value == key.replace('target/', 'online/', 1)
                                    for key, value in shared.items())
    assert not any(key.startswith('target/') for key, entry in apart['tensors'].items()
                   if 'same_as' in entry)
    assert same['files'][carry.TENSORS]['bytes'] < apart['files'][carry.TENSORS]['bytes']
    values = _tensors(carry.materialize(folder, target, carry.check(folder, IDENTITY)))
    for key, value in shared.items():
        assert np.array_equal(values[key], values[value])


def test_floats_are_stored_smaller_than_deflate_of_their_raw_bytes():
    import zlib  # pylint: disable=import-outside-toplevel
    weights = np.random.default_rng(0).normal(0, 0.05, 200_000).astype(np.float32)
    grouped = zlib.compress(carry._grouped(weights).tobytes())  # pylint: disable=protected-access
    assert len(grouped) < 0.95 * len(zlib.compress(weights.tobytes()))
    assert np.array_equal(carry._ungrouped(  # pylint: disable=protected-access
        carry._grouped(weights), weights.dtype, weights.shape), weights)  # pylint: disable=W0212


def test_the_manifest_names_each_file_the_source_and_what_is_not_carried(tmp_path):
    source, folder, _, manifest = _carried(tmp_path)
    assert set(manifest['files']) == {carry.TENSORS, 'metrics.csv', 'episodes.csv', 'run.json',
                                      'invocation.json'}
    for name, entry in manifest['files'].items():
        assert entry['bytes'] == os.path.getsize(os.path.join(folder, name))
        assert entry['sha256'] == carry.sha256(os.path.join(folder, name))
    assert sorted(os.listdir(folder)) == sorted(list(manifest['files']) + [carry.MANIFEST])
    assert manifest['source']['run_dir'] == os.path.abspath(source)
    assert manifest['source']['machine']['cpu_model'] and 'code' in manifest['source']
    assert any('replay' in line for line in manifest['not_carried'])
    with open(os.path.join(folder, carry.MANIFEST)) as f:
        assert json.load(f) == manifest


@pytest.mark.parametrize('damage, named', [
    ('flip', 'checkpoint.npz is damaged'),
    ('remove', 'metrics.csv is missing'),
    ('manifest', 'carry.json is damaged'),
    ('no manifest', 'is not a carried run'),
])
def test_a_missing_or_damaged_file_is_named(tmp_path, damage, named):
    _, folder, target, _ = _carried(tmp_path)
    if damage == 'flip':
        path = os.path.join(folder, carry.TENSORS)
        data = bytearray(open(path, 'rb').read())
        data[len(data) // 2] ^= 0xFF
        open(path, 'wb').write(bytes(data))
    elif damage == 'remove':
        os.remove(os.path.join(folder, 'metrics.csv'))
    elif damage == 'manifest':
        open(os.path.join(folder, carry.MANIFEST), 'w').write('{"files": ')
    else:
        os.remove(os.path.join(folder, carry.MANIFEST))
    with pytest.raises(carry.CarryError) as raised:
        carry.check(folder, IDENTITY)
    assert named in str(raised.value) and '\n' not in str(raised.value)
    assert not os.path.exists(target)


@pytest.mark.parametrize('key, value', [('paper', 'paac'), ('env', 'Breakout'),
                                        ('network', 'nature')])
def test_another_paper_game_or_network_is_refused(tmp_path, key, value):
    _, folder, _, _ = _carried(tmp_path)
    with pytest.raises(carry.CarryError) as raised:
        carry.check(folder, dict(IDENTITY, **{key: value}))
    assert f'{key}: ' in str(raised.value) and 'carries another run' in str(raised.value)


def test_a_carry_goes_into_a_new_directory_only_and_a_failed_one_leaves_none(tmp_path):
    _, folder, target, manifest = _carried(tmp_path)
    os.makedirs(target)
    open(os.path.join(target, 'notes.txt'), 'w').write('mine')
    with pytest.raises(carry.CarryError, match='not empty'):
        carry.materialize(folder, target, manifest)
    assert os.listdir(target) == ['notes.txt']
    broken = dict(manifest, tensors=dict(manifest['tensors']))
    key = next(key for key in broken['tensors'] if key.startswith('online/'))
    broken['tensors'][key] = dict(broken['tensors'][key], sha256='0' * 64)
    fresh = str(tmp_path / 'fresh')
    with pytest.raises(carry.CarryError, match='does not read back'):
        carry.materialize(folder, fresh, broken)
    assert not os.path.exists(fresh)


def test_a_run_still_training_or_without_a_checkpoint_is_not_carried(tmp_path):
    source = str(tmp_path / 'source')
    app.prepare_run_dir(source, {'paper': 'test'}, IDENTITY)
    with pytest.raises(carry.CarryError, match='no checkpoint'):
        carry.write(source, str(tmp_path / 'carried'))
    holder = subprocess.Popen(
        [sys.executable, '-c', 'import sys, time; from common.run import run_lock; '
         f'run_lock.acquire({source!r}); print("held", flush=True); time.sleep(60)'],
        stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT))
    try:
        assert holder.stdout.readline().strip() == 'held'
        with pytest.raises(carry.CarryError, match='still training'):
            carry.write(source, str(tmp_path / 'carried'))
    finally:
        holder.kill()
        holder.wait()
    assert not os.path.exists(tmp_path / 'carried')


def test_a_carry_is_written_over_an_earlier_carry_only_and_a_published_run_is_not_one(tmp_path):
    """common.carry replaced whatever its FOLDER held: a published run or a run directory given
    there would have been deleted. Now only an earlier carry is replaced; and --resume_from a
    published run says what it lacks and how to go on."""
    source, folder, _, _ = _carried(tmp_path)
    carry.write(source, folder)  # over the earlier carry: fine
    for name, marker, what in (('published', 'policy_weights.index', 'a published run'),
                               ('run', 'run.json', 'a run directory'),
                               ('notes', 'notes.txt', 'files but no carry')):
        kept = tmp_path / name
        kept.mkdir()
        (kept / marker).write_text('mine')
        with pytest.raises(carry.CarryError, match=f"FOLDER='{kept}' holds {what}; a carry is "
                           'written into a new or empty folder'):
            carry.write(source, str(kept))
        assert [path.name for path in kept.iterdir()] == [marker]
        assert (kept / marker).read_text() == 'mine'
    with pytest.raises(carry.CarryError) as raised:
        carry.check(str(tmp_path / 'published'), IDENTITY)
    assert 'is a published run: it keeps the final policy, not the optimizer state' in str(
        raised.value)
    assert 'python -m common.carry RUN_DIR FOLDER' in str(raised.value)


def test_a_carried_sessions_first_row_says_so(tmp_path):
    _, folder, target, manifest = _carried(tmp_path)
    carry.materialize(folder, target, carry.check(folder, IDENTITY))
    app.prepare_run_dir(target, {'paper': 'test', 'gin_files': [], 'gin_bindings': []}, IDENTITY,
                        carried=carry.session_note(folder, manifest))
    assert run_record.last_session(target)[run_record.CARRIED_FROM]['env_steps'] == 300
    modules = _modules()
    tracker = _tracker(target, modules)
    assert tracker.session_start == 'carried'
    tracker.add_steps(100, updates=1)
    tracker.log_interval(updates=1)
    tracker.add_steps(100, updates=1)
    tracker.log_interval(updates=1)
    tracker.close()
    rows = run_files.read_csv(os.path.join(target, 'metrics.csv'))
    assert [row[tracker_lib.SESSION_START] for row in rows] == ['new', '', '', 'carried', '']
    assert [int(row['env_steps']) for row in rows] == [100, 200, 300, 400, 500]


@pytest.mark.slow
def test_the_command_writes_a_carry_and_prints_how_to_resume_it(tmp_path):
    source = str(tmp_path / 'source')
    _make_run(source, target_equal=True)
    result = subprocess.run([sys.executable, '-m', 'common.carry', source,
                             str(tmp_path / 'carried')], capture_output=True, text=True,
                            cwd=app.PROJECT_ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert 'at step 300' in result.stdout and 'stored once' in result.stdout
    assert '--resume_from=' in result.stdout and 'not carried: replay memory' in result.stdout
    assert os.path.isfile(tmp_path / 'carried' / carry.MANIFEST)
    refused = subprocess.run([sys.executable, '-m', 'common.carry', str(tmp_path / 'nothing'),
                              str(tmp_path / 'other')], capture_output=True, text=True,
                             cwd=app.PROJECT_ROOT, timeout=120)
    assert refused.returncode == 2 and 'is not a run directory' in refused.stderr
    assert not os.path.exists(tmp_path / 'other')


def test_a_run_directory_holding_the_carried_run_is_resumed_in_place_only_if_not_behind(
        tmp_path, capsys):
    source = str(tmp_path / 'source')
    modules = _make_run(source, updates=2)
    shutil.copytree(source, tmp_path / 'behind')
    tracker = _tracker(source, modules)
    tracker.add_steps(100, updates=1)
    tracker.save()
    tracker.close()
    manifest = carry.write(source, str(tmp_path / 'carried'))
    assert manifest['env_steps'] == 300
    folder = str(tmp_path / 'carried')
    # pylint: disable=protected-access
    assert app._resume_in_place_instead(folder, source, manifest) is None
    assert 'holds the carried run at step 300' in capsys.readouterr().out
    with pytest.raises(errors.ConfigError, match='at step 200, before the carried 300'):
        app._resume_in_place_instead(folder, str(tmp_path / 'behind'), manifest)
    _make_run(str(tmp_path / 'other'))
    with pytest.raises(errors.ConfigError, match='holds another run than the carried'):
        app._resume_in_place_instead(folder, str(tmp_path / 'other'), manifest)


def test_rerunning_the_command_that_last_resumed_a_run_finds_it(tmp_path):
    runs = tmp_path / 'runs'
    first = {'paper': 'test', 'gin_files': ['a.gin'], 'gin_bindings': []}
    later = dict(first, gin_bindings=['x = 1'])
    app.prepare_run_dir(str(runs / 'test-CartPole-v1-20261206-000000'), first, IDENTITY)
    assert app.resolve_run_dir('test', 'CartPole-v1', None, later, str(runs)) != \
        str(runs / 'test-CartPole-v1-20261206-000000')
    app.prepare_run_dir(str(runs / 'test-CartPole-v1-20261206-000000'), later, IDENTITY)
    for invocation in (first, later):
        assert app.resolve_run_dir('test', 'CartPole-v1', None, invocation, str(runs)) == \
            str(runs / 'test-CartPole-v1-20261206-000000')
