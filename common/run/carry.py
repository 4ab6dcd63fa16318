"""A run's portable state (a carry): what another machine needs to go on with the run.

`write(run_dir, folder)` puts the newest readable checkpoint (networks, optimizer slots, target
network, counters, generator state: every tensor, bit for bit) and the run's records (the CSVs,
run.json, invocation.json, operative_config.gin) into folder, with carry.json naming each file's
SHA-256. Each tensor is stored once (a target network just copied from the online one is stored
as the same bytes) with its bytes regrouped by significance before deflate, which shrinks float
weights and optimizer slots by about 15% where deflate of the raw bytes (what git does) gets 7%.
`check(folder, ...)` refuses a missing or damaged file and another paper, game or model in one
line before anything is written; `materialize(folder, run_dir)` writes the files into a new run
directory and the checkpoint back as TensorFlow's own bundle, so a resume from it is a resume in
place. Not carried: replay memory (refilled on resume), older checkpoints, TensorBoard events.
"""
import datetime
import hashlib
import json
import os
import shutil
import tempfile

import numpy as np
import tensorflow as tf

from common.run import checkpoint as checkpoint_lib
from common.run import published
from common.run import run_lock
from common.run import run_record
from common.system import errors
from common.system import file_writes

MANIFEST = published.CARRY_MANIFEST
TENSORS = 'checkpoint.npz'
FORMAT = 1
RUN_FILE = 'run.json'
NOT_CARRIED = ('replay memory: refilled on resume by the warm-up the run starts with',
               'older checkpoints', 'TensorBoard events')


class CarryError(errors.ConfigError):
    """A carry cannot be written or used; the message names the file or the difference."""


def _records(run_dir):
    """The run's record files that a carry holds: its CSVs, JSON records and gin configs."""
    names = []
    for name in sorted(os.listdir(run_dir)):
        path = os.path.join(run_dir, name)
        if os.path.isfile(path) and (name.endswith('.csv') or name.endswith('.gin') or (
                name.endswith('.json') and name != MANIFEST)):
            names.append(name)
    return names


def sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def _grouped(array):
    """The array's bytes with byte k of every item together (k = 0..itemsize-1): exponents and
    high mantissa bytes of floats fall in runs that deflate finds."""
    raw = np.frombuffer(np.ascontiguousarray(array).tobytes(), np.uint8)
    size = array.dtype.itemsize
    return raw.reshape(-1, size).T.copy() if size > 1 and raw.size else raw.copy()


def _ungrouped(grouped, dtype, shape):
    raw = grouped.T.reshape(-1) if grouped.ndim == 2 else grouped
    return np.frombuffer(raw.tobytes(), dtype).reshape(shape)


def _tensors(prefix):
    """{key: (dtype name, numpy value)} of every tensor of checkpoint prefix."""
    reader = tf.train.load_checkpoint(prefix)
    dtypes = reader.get_variable_to_dtype_map()
    return {key: (dtypes[key].name, reader.get_tensor(key)) for key in sorted(dtypes)}


def write(run_dir, folder):
    """Writes run_dir's portable state into folder (replacing what a carry left there); returns
    the manifest. CarryError, writing nothing, for a run still training or without a readable
    checkpoint, and for a folder that holds anything but a carry (a published run, a run)."""
    if not os.path.isfile(os.path.join(run_dir, RUN_FILE)):
        raise CarryError(f'{run_dir!r} is not a run directory (no {RUN_FILE})')
    if os.path.exists(folder) and not published.is_carry(folder) and not (
            os.path.isdir(folder) and not os.listdir(folder)):
        what = ('a published run' if published.is_published(folder) else
                'a run directory' if os.path.isfile(os.path.join(folder, RUN_FILE)) else
                'a file' if not os.path.isdir(folder) else 'files but no carry')
        raise CarryError(f'FOLDER={folder!r} holds {what}; a carry is written into a new or '
                         f'empty folder, or over an earlier carry ({MANIFEST})')
    holder = run_lock.live_holder(run_dir)
    if holder is not None:
        raise CarryError(f'{run_dir} is still training ({holder}): stop it (Ctrl-C saves a '
                         'checkpoint) and carry it then')
    prefix = checkpoint_lib.first_readable(os.path.join(run_dir, checkpoint_lib.CHECKPOINT_DIR))
    if prefix is None:
        raise CarryError(f'{run_dir} has no checkpoint to carry')
    tensors = _tensors(prefix)
    parent = os.path.dirname(os.path.abspath(folder))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix='.carry-', dir=parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)  # as a plain mkdir would make it, not mkdtemp's 0700
    try:
        manifest = _write_into(staging, run_dir, prefix, tensors)
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.replace(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def _write_into(staging, run_dir, prefix, tensors):
    arrays, entries, first_of = {}, {}, {}
    for index, (key, (dtype, value)) in enumerate(tensors.items()):
        if dtype == 'string':
            data = np.frombuffer(bytes(value), np.uint8).copy()
            digest = hashlib.sha256(data.tobytes()).hexdigest()
            entry = {'dtype': dtype, 'shape': [], 'sha256': digest}
        else:
            value = np.asarray(value)
            data = _grouped(value)
            digest = hashlib.sha256(value.tobytes()).hexdigest()
            entry = {'dtype': dtype, 'shape': list(value.shape), 'sha256': digest}
        same = first_of.get((dtype, tuple(entry['shape']), digest))
        if same is not None:
            entry['same_as'] = same
        else:
            first_of[(dtype, tuple(entry['shape']), digest)] = key
            entry['array'] = f't{index}'
            arrays[entry['array']] = data
        entries[key] = entry
    np.savez_compressed(os.path.join(staging, TENSORS), **arrays)
    files = {}
    for name in _records(run_dir):
        shutil.copyfile(os.path.join(run_dir, name), os.path.join(staging, name))
    for name in sorted(os.listdir(staging)):
        path = os.path.join(staging, name)
        files[name] = {'bytes': os.path.getsize(path), 'sha256': sha256(path)}
    steps = int(tensors['counters/env_steps/.ATTRIBUTES/VARIABLE_VALUE'][1])
    manifest = {
        'format': FORMAT,
        'env_steps': steps,
        'checkpoint': os.path.basename(prefix),
        'source': {'run_dir': os.path.abspath(run_dir),
                   'carried_at': datetime.datetime.now().astimezone().isoformat(
                       timespec='seconds'),
                   **run_record.session_record(_project_root())},
        'not_carried': list(NOT_CARRIED),
        'files': files,
        'tensors': entries,
    }
    del manifest['source']['started'], manifest['source']['id']
    file_writes.write_json(os.path.join(staging, MANIFEST), manifest)
    return manifest


def _project_root():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_manifest(folder):
    """folder's carry.json; CarryError if the folder or its manifest is missing or damaged."""
    path = os.path.join(folder, MANIFEST)
    if not os.path.isfile(path) and published.is_published(folder):
        raise CarryError(f'--resume_from={folder!r} is a published run: it keeps the final '
                         'policy, not the optimizer state and counters a run goes on from; '
                         + published.GO_ON)
    if not os.path.isfile(path):
        raise CarryError(f'--resume_from={folder!r} is not a carried run (no {MANIFEST}; '
                         'python -m common.carry RUN_DIR FOLDER writes one)')
    try:
        with open(path) as f:
            manifest = json.load(f)
        if not (isinstance(manifest['files'], dict) and isinstance(manifest['tensors'], dict)):
            raise TypeError('files and tensors must be objects')
        int(manifest['env_steps'])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise CarryError(f'{path} is damaged ({type(error).__name__}: {error})') from None
    if manifest.get('format') != FORMAT:
        raise CarryError(f'{path} is carry format {manifest.get("format")!r}; this version '
                         f'reads {FORMAT}')
    return manifest


def check(folder, identity):
    """The manifest of the carry in folder, after checking that every file it names is there
    and whole (SHA-256) and that its run is identity's (paper, game, observation and action
    shapes, model); CarryError in one line otherwise. Reads, never writes."""
    manifest = read_manifest(folder)
    for name in (TENSORS, RUN_FILE):
        if name not in manifest['files']:
            raise CarryError(f'{os.path.join(folder, MANIFEST)} names no {name}')
    for name, entry in sorted(manifest['files'].items()):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise CarryError(f'{path} is missing from the carried run')
        if os.path.getsize(path) != entry['bytes'] or sha256(path) != entry['sha256']:
            raise CarryError(f'{path} is damaged (its SHA-256 is not the one {MANIFEST} '
                             'records)')
    try:
        with open(os.path.join(folder, RUN_FILE)) as f:
            recorded = json.load(f)
        dict(recorded)
    except (OSError, ValueError, TypeError) as error:
        raise CarryError(f'{os.path.join(folder, RUN_FILE)} is not a run record ({error})')
    differences = run_record.identity_differences(recorded, identity)
    if differences:
        raise CarryError(f'{folder} carries another run ({"; ".join(differences)}); it cannot '
                         'be resumed by this command')
    return manifest


def same_run(folder, run_dir):
    """Whether run_dir holds the run carried in folder (the same first session), so that
    resuming it in place goes on from where the carry did or later."""
    try:
        with open(os.path.join(folder, RUN_FILE)) as f:
            carried = json.load(f)[run_record.SESSIONS][0]
        with open(os.path.join(run_dir, RUN_FILE)) as f:
            here = json.load(f)[run_record.SESSIONS][0]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return False
    return carried == here


def materialize(folder, run_dir, manifest):
    """Writes the carry in folder (checked by check()) into run_dir, which must be new or empty:
    its record files, and its checkpoint as checkpoints/ckpt-<steps> read back whole. Anything
    written is removed again if a step fails. Returns the checkpoint prefix."""
    if os.path.isdir(run_dir) and set(os.listdir(run_dir)) - {run_lock.LOCK_FILE}:
        raise CarryError(f'--run_dir={run_dir!r} is not empty; a carried run goes on in a new '
                         'run directory')
    created = not os.path.isdir(run_dir)
    os.makedirs(run_dir, exist_ok=True)
    try:
        for name in manifest['files']:
            if name not in (TENSORS, MANIFEST):
                shutil.copyfile(os.path.join(folder, name), os.path.join(run_dir, name))
        return _write_checkpoint(folder, run_dir, manifest)
    except BaseException:
        if created:
            shutil.rmtree(run_dir, ignore_errors=True)
        else:
            for name in set(os.listdir(run_dir)) - {run_lock.LOCK_FILE}:
                path = os.path.join(run_dir, name)
                if os.path.isdir(path):
                    shutil.rmtree(path)
                else:
                    os.remove(path)
        raise


def tensors_of(folder, manifest):
    """{key: numpy value (bytes for strings)} of the carried checkpoint, each checked against
    its SHA-256."""
    with np.load(os.path.join(folder, TENSORS)) as stored:
        arrays = {name: stored[name] for name in stored.files}
    values = {}
    entries = manifest['tensors']
    for key, entry in entries.items():
        source = entries[entry['same_as']] if 'same_as' in entry else entry
        data = arrays[source['array']]
        if entry['dtype'] == 'string':
            value = data.tobytes()
            digest = hashlib.sha256(value).hexdigest()
        else:
            dtype = np.dtype(tf.as_dtype(entry['dtype']).as_numpy_dtype)
            value = _ungrouped(data, dtype, entry['shape'])
            digest = hashlib.sha256(value.tobytes()).hexdigest()
        if digest != entry['sha256']:
            raise CarryError(f'{os.path.join(folder, TENSORS)}: tensor {key} does not read back '
                             'as carried (SHA-256 differs)')
        values[key] = value
    return values


def _write_checkpoint(folder, run_dir, manifest):
    values = tensors_of(folder, manifest)
    directory = os.path.join(run_dir, checkpoint_lib.CHECKPOINT_DIR)
    os.makedirs(directory, exist_ok=True)
    prefix = os.path.join(directory, f'ckpt-{int(manifest["env_steps"])}')
    keys = sorted(values)
    tensors = [tf.constant(values[key], dtype=tf.as_dtype(manifest['tensors'][key]['dtype']))
               for key in keys]
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=keys, shape_and_slices=[''] * len(keys),
                      tensors=tensors)
    reason = checkpoint_lib.verify(prefix)
    if reason is not None:
        raise CarryError(f'{prefix} did not read back ({reason})')
    checkpoint_lib.write_index(directory, [prefix])
    return prefix


def session_note(folder, manifest):
    """What run.json's new session records of the carry it started from."""
    source = manifest['source']
    return {'folder': os.path.abspath(folder), 'env_steps': int(manifest['env_steps']),
            'carried_at': source.get('carried_at'), 'from_run_dir': source.get('run_dir'),
            'machine': source.get('machine'), 'code': source.get('code')}
