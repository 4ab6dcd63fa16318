"""What a ReplayMemory saves and how a save is checked and read back into one.

The per-step arrays go only up to the furthest position any stream has written, so a replay
stopped before its streams wrap saves what it holds, not its whole capacity. The files
themselves (writing beside and renaming in, .npy parts) are common/replay/replay_files.py.
Nothing here imports TensorFlow.
"""
import numpy as np

from common.replay import replay_files

__all__ = ('SAVED_ARRAYS', 'STEP_ARRAYS', 'saved_state', 'check_saved', 'load_saved')

# What ReplayMemory.save() writes, each as <name>.npy; the per-step ones [stream, position]
# only up to the furthest position written.
SAVED_ARRAYS = ('frames', 'actions', 'rewards', 'terminals', 'episode_starts', 'cursors',
                'counts', 'dangling')
STEP_ARRAYS = ('frames', 'actions', 'rewards', 'terminals', 'episode_starts')


def saved_state(memory, env_steps, kind):
    """(arrays, meta) that memory.save() writes: every array that holds steps or says where they
    go, the settings, the sampling generator's state; ReplayFileError if nothing is held or
    a write was cut short (a save would hold half a step). The per-step arrays go only up
    to the furthest position any stream has written (before the streams wrap, a replay
    stopped at 15% full saves 15% of its frames), as views, not copies."""
    memory.writes.refuse_save('a save would hold half a step')
    if len(memory) == 0:
        raise replay_files.ReplayFileError('replay holds no steps')
    filled = int(memory.counts.max())
    arrays = {name: getattr(memory, name)[:, :filled] if name in STEP_ARRAYS
              else getattr(memory, name) for name in SAVED_ARRAYS}
    meta = {'format': replay_files.FORMAT, 'kind': kind, 'env_steps': int(env_steps),
            'settings': memory.settings(), 'gamma': memory.gamma,
            'arrays': {name: {'shape': list(array.shape), 'dtype': array.dtype.name}
                       for name, array in arrays.items()},
            'rng_state': memory.rng.bit_generator.state}
    return arrays, meta


def check_saved(memory, meta, directory, env_steps, kind):
    """ReplayFileError unless meta (a save's) is of kind, of env_steps, and of
    memory.settings()."""
    Error = replay_files.ReplayFileError
    if meta.get('kind') != kind:
        raise Error(f"{directory} holds a {meta.get('kind')} replay; this run's is {kind}")
    if meta.get('env_steps') != env_steps:
        saved = meta.get('env_steps')
        saved = f'{saved:,}' if isinstance(saved, int) else repr(saved)
        raise Error(f'{directory} holds the replay of step {saved}; the checkpoint resumed '
                    f'from is at step {env_steps:,}')
    saved = meta.get('settings') if isinstance(meta.get('settings'), dict) else {}
    for key, value in memory.settings().items():
        if saved.get(key) != value:
            raise Error(f"{directory} was saved with {key}={saved.get(key)!r}; this run's "
                        f"replay has {key}={value!r}")


def load_saved(memory, directory, meta):
    """Reads a checked save into memory (a new or cleared ReplayMemory): the small arrays
    first, then the frames slice by slice into memory.frames (no second copy in memory), then
    cursors and counts; marks the session boundary. Any failure, or an interrupt, leaves
    memory empty."""
    Error = replay_files.ReplayFileError
    capacity = memory.stream_capacity
    try:
        filled = int(meta['arrays']['frames']['shape'][1])
    except (KeyError, TypeError, IndexError, ValueError) as error:
        raise Error(f'{directory}/{replay_files.META_FILE} lacks the shape of frames '
                    f'({error!r})') from None
    if not 0 < filled <= capacity:
        raise Error(f'{directory} holds {filled} positions per stream; this replay has '
                    f'{capacity}')
    small = {name: replay_files.load_array(
                 directory, name, getattr(memory, name)[:, :filled].shape
                 if name in STEP_ARRAYS else getattr(memory, name).shape,
                 getattr(memory, name).dtype)
             for name in SAVED_ARRAYS if name not in ('frames', 'dangling')}
    cursors, counts = small.pop('cursors'), small.pop('counts')
    if (np.any((cursors < 0) | (cursors >= capacity) | (counts < 0) | (counts > filled))
            or np.any((counts < capacity) & (cursors != counts))):
        raise Error(f'{directory} holds cursors {cursors.tolist()} and counts '
                    f'{counts.tolist()} that no replay of {capacity} steps per stream '
                    f'saved to {filled} positions has')
    try:
        dangling_shape = tuple(meta['arrays']['dangling']['shape'])
    except (KeyError, TypeError) as error:
        raise Error(f'{directory}/{replay_files.META_FILE} lacks the shape of dangling '
                    f'({error!r})') from None
    dangling = replay_files.load_array(directory, 'dangling', dangling_shape, np.int64)
    if dangling.ndim != 1 or np.any((dangling < 0) | (dangling >= memory.capacity)):
        raise Error(f'{directory}/dangling.npy holds steps outside this replay')
    rng = np.random.default_rng()
    try:
        rng.bit_generator.state = meta['rng_state']
    except (KeyError, TypeError, ValueError) as error:
        raise Error(f'{directory}/{replay_files.META_FILE} holds no usable generator state '
                    f'({type(error).__name__}: {error})') from None
    memory.clear()
    try:
        replay_files.copy_array_into(directory, 'frames', memory.frames[:, :filled])
        for name, array in small.items():
            getattr(memory, name)[:, :filled] = array
        memory.cursors[:], memory.counts[:] = cursors, counts
    except BaseException:
        memory.clear()
        raise
    memory.rng = rng
    memory.mark_session_boundary(dangling)
