"""absl + gin entry helper shared by every paper's `main`: flags, config parsing, run directory.

Everything here runs before any worker process or thread starts, so a bad flag, binding or value
ends the program with one line naming it and nothing already in a run directory is touched.
"""
import datetime
import json
import os
import signal
import sys
import tokenize

from absl import app
from absl import flags
from absl import logging
import gin

from common.run import operative_config
from common.run import published
from common.run import run_lock
from common.run import run_record
from common.run import superseded
from common.system import errors
from common.system import file_writes
from common.system import gin_text
from common.system import machine_load

def define_flags():
    """Defines the flags every command takes (--gin_file, --gin_bindings, --run_dir, --verbose)
    in absl's registry, once; execute() calls it, so importing this module defines nothing (a
    library user's script keeps those names for its own flags)."""
    if 'gin_file' in flags.FLAGS:
        return
    flags.DEFINE_multi_string('gin_file', [], 'Gin config file; repeatable, later files win.')
    flags.DEFINE_multi_string('gin_bindings', [],
                              "Gin binding such as 'paac.train.num_envs = 16'; repeatable, "
                              'applied after the files.')
    flags.DEFINE_string('run_dir', None,
                        'Run directory. Default: the newest runs/<paper>-<game>-<timestamp> '
                        'started by the same command (so rerunning resumes), else a new one.')
    flags.DEFINE_boolean('verbose', False,
                         "Show TensorFlow's start-up logs (read by common/system/quiet_import.py "
                         'before TensorFlow loads; TF_CPP_MIN_LOG_LEVEL=0 does the same, '
                         '1-3 keep them hidden).')


FLAGS = flags.FLAGS

# gin files include each other by paths from the repository root ('gin/paac/paper.gin').
PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

INVOCATION_FILE = 'invocation.json'
OPERATIVE_CONFIG_FILE = operative_config.OPERATIVE_CONFIG_FILE
# What the run's checkpoints hold (paper, environment, model); a rerun that differs is refused.
RUN_FILE = 'run.json'


def fail(message, exit_code=2):
    """Prints a one-line error for the user and exits; used before anything has started."""
    print(f'error: {message}', file=sys.stderr)
    sys.exit(exit_code)


def _search_project_root_first():
    """Makes gin look for included files ('gin/paac/paper.gin') under the repository first:
    tried relative to the working directory first, a miss makes gin's package-path reader log
    an error-level 'Path not found' line before the search path finds the file."""
    # gin's API only appends search paths; its list is reordered in place.
    prefixes = gin.config._LOCATION_PREFIXES  # pylint: disable=protected-access
    if prefixes[:1] != [PROJECT_ROOT]:
        if PROJECT_ROOT in prefixes:
            prefixes.remove(PROJECT_ROOT)
        prefixes.insert(0, PROJECT_ROOT)


def parse_gin(gin_files, gin_bindings, renamed=None, moved=None):
    """Parses gin files and bindings (after clearing any earlier config) into the global gin
    config, turning gin's exceptions into one-line ConfigErrors.

    renamed: {binding name that no longer exists: what to do instead}; a file (or a file it
    includes) or binding that still uses one is refused with that line (gin would only say it
    does not know the name). moved: {old binding name: its name today}; a file or binding that
    uses an old name is read as the new one, with a warning line.
    """
    gin.clear_config()
    _search_project_root_first()
    for path in gin_files:
        if not os.path.isfile(path):
            raise errors.ConfigError(f'gin file not found: {path!r}')
    texts = [(f'--gin_bindings={binding!r}', binding) for binding in gin_bindings]
    for path in gin_files:
        texts += gin_text.check_includes(path, PROJECT_ROOT)
    if renamed:
        _refuse_renamed(texts, renamed)
    moved = moved or {}
    for where, text in texts:
        for old, new in moved.items():
            if gin_text.binds(text, old):
                print(f'warning: {old} ({where}) is read as {new}, its name now',
                      file=sys.stderr)
    read_bindings = [gin_text.read_moved(binding, moved) for binding in gin_bindings]
    try:
        with gin_text.files_read_moved(moved):
            gin.parse_config_files_and_bindings(gin_files, read_bindings, finalize_config=False)
    except (ValueError, SyntaxError, tokenize.TokenError, KeyError, TypeError) as error:
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise errors.ConfigError(f'bad gin config {list(gin_files) + list(gin_bindings)}: {detail}')


def parse_recorded_config(run_dir, obsolete=(), moved=None):
    """Parses a run's operative_config.gin (to rebuild its model for evaluation), reading moved
    names ({old: new}) as their names today and leaving out bindings that no longer exist: those
    named in obsolete (a paper's renamed bindings) and those of configurables this version does
    not have. A run from an older version stays evaluable; what it trained with is in the file
    as it was."""
    path = os.path.join(run_dir, OPERATIVE_CONFIG_FILE)
    if not os.path.isfile(path):
        raise errors.ConfigError(f'{run_dir!r} has no {OPERATIVE_CONFIG_FILE}')
    with open(path) as f:
        lines = gin_text.read_moved(f.read(), moved or {}).splitlines()
    kept = [line for line in lines if not any(gin_text.binds(line, name) for name in obsolete)]
    gin.clear_config()
    try:
        gin.parse_config('\n'.join(kept), skip_unknown=True)
    except (ValueError, SyntaxError, KeyError, TypeError) as error:
        raise errors.ConfigError(f'{path}: {str(error).strip().splitlines()[0]}')


def _refuse_renamed(texts, renamed):
    """texts: (where, gin text) of every binding and file read, included ones too."""
    for where, text in texts:
        for old, new in renamed.items():
            if gin_text.binds(text, old):
                raise errors.ConfigError(f'{old} ({where}) is not a binding: {new}')


def read_json(path):
    """The JSON object in path, None if there is no such file; errors.ConfigError if it is
    damaged."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path) as f:
            value = json.load(f)
    except (OSError, ValueError) as error:
        raise errors.ConfigError(f'{path} is not readable JSON ({error})')
    if not isinstance(value, dict):
        raise errors.ConfigError(f'{path} holds {type(value).__name__}, not a JSON object')
    return value


def read_invocation(run_dir):
    """run_dir's invocation.json, None if it has none; errors.ConfigError if it is damaged."""
    return read_json(os.path.join(run_dir, INVOCATION_FILE))


def run_identity(paper, env_config, **model):
    """What a run's checkpoints depend on: paper, environment, observation and action shapes,
    and the model settings given (network, ...), as plain JSON values."""
    return {'paper': paper, 'env': env_name(env_config),
            'observation_shape': [int(size) for size in env_config.observation_shape],
            'num_actions': int(env_config.num_actions()),
            **{key: json.loads(json.dumps(value)) for key, value in model.items()}}


def check_run_dir(run_dir, identity, checkpoint_every_steps=None):
    """Raises errors.ConfigError, before anything is written, when run_dir cannot take this run:
    it is a file, a published run or a carry (records no command writes into), its run.json
    records another paper, environment or model, it holds checkpoints of which none can be read,
    or its CSVs show training past a checkpoint it no longer holds (starting over would set that
    curve aside)."""
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise errors.ConfigError(f'--run_dir={run_dir!r} is a file, not a directory')
    published.refuse_record(run_dir)
    read_invocation(run_dir)  # a damaged one is named here, not after a traceback
    recorded = read_json(os.path.join(run_dir, RUN_FILE))
    differences = [] if recorded is None else run_record.identity_differences(recorded,
                                                                              identity)
    if differences:
        raise errors.ConfigError(f'{run_dir} holds another run ({"; ".join(differences)}); its '
                                 'checkpoints cannot be resumed by this command: give another '
                                 '--run_dir')
    from common.run import checkpoint  # pylint: disable=import-outside-toplevel  (TensorFlow)
    directory = os.path.join(run_dir, checkpoint.CHECKPOINT_DIR)
    try:
        prefix = checkpoint.first_readable(directory, quiet=True)
    except checkpoint.CheckpointError as error:
        raise errors.ConfigError(str(error))
    progress = None
    if prefix is None and os.path.isdir(run_dir):
        progress = superseded.progress_without_checkpoint(run_dir, checkpoint_every_steps)
    if progress:
        raise errors.ConfigError(
            f'{run_dir} holds a run\'s progress ({progress}) but no checkpoint to go on from '
            f'({directory} {"holds none" if os.path.isdir(directory) else "is missing"}); '
            'starting over would set its curve aside: restore its checkpoints, or give a new '
            '--run_dir')


def latest_invocation(run_dir):
    """The newest command a session of run_dir ran with: its newest invocation.resume-*.json
    (a resume with another command, or a carried run's first session here), else
    invocation.json; None if it has neither."""
    names = sorted(name for name in os.listdir(run_dir)
                   if name.startswith('invocation.resume-') and name.endswith('.json')) \
        if os.path.isdir(run_dir) else []
    return read_json(os.path.join(run_dir, names[-1])) if names else read_invocation(run_dir)


def resolve_run_dir(paper, game, run_dir, invocation, runs_root='runs'):
    """Picks the run directory: the given one, else the newest one this same invocation started
    or last resumed (a carried run written here by that command, say).

    Reusing the newest matching directory is what makes rerunning an interrupted command resume
    from its checkpoint instead of starting over in a fresh timestamped directory.
    """
    if run_dir:
        return run_dir
    prefix = f'{paper}-{game}-'
    if os.path.isdir(runs_root):
        candidates = sorted(
            (name for name in os.listdir(runs_root) if name.startswith(prefix)), reverse=True)
        for name in candidates:
            path = os.path.join(runs_root, name)
            if invocation in (read_invocation(path), latest_invocation(path)):
                return path
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    path = os.path.join(runs_root, prefix + stamp)
    suffix = 1
    while os.path.exists(path):  # Another run started in the same second.
        path = os.path.join(runs_root, f'{prefix}{stamp}-{suffix}')
        suffix += 1
    return path


def prepare_run_dir(run_dir, invocation, identity=None, resolved=None, carried=None,
                    env_probe=None):
    """Creates run_dir and records the invocation, the identity (once) and this session
    (run_record, with the config values resolved for it: common.launch.config.resolved_record;
    the carry it starts from, common.run.carry.session_note; and in its machine the
    environment-only rate, common.envs.env_probe); never overwrites what an earlier run
    wrote."""
    os.makedirs(run_dir, exist_ok=True)
    record_path = os.path.join(run_dir, RUN_FILE)
    if identity is not None:
        recorded = read_json(record_path) or dict(identity)
        session = run_record.session_record(PROJECT_ROOT)
        if resolved:
            session['resolved'] = resolved
        if carried:
            session[run_record.CARRIED_FROM] = carried
        if env_probe:
            session['machine']['env_probe'] = env_probe
        recorded.setdefault(run_record.SESSIONS, []).append(session)
        file_writes.write_json(record_path, recorded)
    previous = read_invocation(run_dir)
    if previous is None:
        file_writes.write_json(os.path.join(run_dir, INVOCATION_FILE), invocation)
    elif previous != invocation:
        # A changed config on resume is allowed (e.g. more total steps); keep both records.
        stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
        file_writes.write_json(os.path.join(run_dir, f'invocation.resume-{stamp}.json'),
                               invocation)


def env_name(env_config):
    """The game or environment id a run directory is named after."""
    return getattr(env_config, 'game', None) or getattr(env_config, 'env_id', 'env')


def start_run_dir(paper, env_config, resolved=None, checkpoint_every_steps=None, **model):
    """Resolves, checks (check_run_dir), creates and records the run directory for this
    command's flags; prints it. model: the settings the checkpoints depend on (network, ...);
    resolved: the config values resolved for this session (prepare_run_dir). With
    --resume_from=FOLDER (a carried run, common.carry), the carry is checked first and written
    into the run directory, which must be new, unless it already holds that run."""
    invocation = {'paper': paper, 'gin_files': FLAGS.gin_file, 'gin_bindings': FLAGS.gin_bindings}
    identity = run_identity(paper, env_config, **model)
    folder = FLAGS.resume_from if 'resume_from' in FLAGS else None
    if folder:
        from common.run import carry  # pylint: disable=import-outside-toplevel  (TensorFlow)
        manifest = carry.check(folder, identity)
        operative_config.check_env_unchanged(folder, env_config, FLAGS.gin_bindings)
    run_dir = resolve_run_dir(paper, env_name(env_config), FLAGS.run_dir, invocation)
    if folder and os.path.isfile(os.path.join(run_dir, RUN_FILE)):
        folder = _resume_in_place_instead(folder, run_dir, manifest)
    elif folder and os.path.isdir(run_dir) and set(os.listdir(run_dir)) - {run_lock.LOCK_FILE}:
        raise errors.ConfigError(f'--run_dir={run_dir!r} holds files but no run; a carried run '
                                 'goes on in a new or empty run directory')
    check_run_dir(run_dir, identity, checkpoint_every_steps)
    operative_config.check_env_unchanged(run_dir, env_config, FLAGS.gin_bindings)
    try:
        took_over = run_lock.acquire(run_dir)
    except run_lock.RunDirInUse as error:
        raise errors.ConfigError(str(error)) from None
    if took_over:
        print(took_over)
    carried = None
    if folder:
        prefix = carry.materialize(folder, run_dir, manifest)
        carried = carry.session_note(folder, manifest)
        print(f'carried run {folder} (step {carried["env_steps"]:,}, carried from '
              f'{carried["from_run_dir"]} on {machine_load.describe(carried["machine"])}) '
              f'written as {prefix}')
    from common.envs import env_probe  # pylint: disable=import-outside-toplevel
    prepare_run_dir(run_dir, invocation, identity, resolved, carried,
                    env_probe.session_probe(env_config))
    print(f'run directory: {run_dir}')
    return run_dir


def _resume_in_place_instead(folder, run_dir, manifest):
    """None (resume run_dir in place) when run_dir already holds the carried run at the carried
    step or later, as a rerun of an interrupted carried session finds it; ConfigError
    otherwise."""
    from common.run import carry  # pylint: disable=import-outside-toplevel
    from common.run import checkpoint  # pylint: disable=import-outside-toplevel
    if not carry.same_run(folder, run_dir):
        raise errors.ConfigError(f'--run_dir={run_dir!r} holds another run than the carried '
                                 f'{folder}; a carried run goes on in a new run directory')
    prefix = checkpoint.first_readable(os.path.join(run_dir, checkpoint.CHECKPOINT_DIR),
                                       quiet=True)
    steps = checkpoint.steps_of(prefix) if prefix else -1
    carried = int(manifest['env_steps'])
    if steps < carried:
        raise errors.ConfigError(f'--run_dir={run_dir!r} holds the carried run at step '
                                 f'{max(steps, 0):,}, before the carried {carried:,}; give a '
                                 'new --run_dir to go on from the carry')
    print(f'{run_dir} holds the carried run at step {steps:,} (carried at {carried:,}): '
          'resuming it in place; the carry is not read again')
    return None


def _stop_run(signum, frame):
    """The first Ctrl-C or SIGTERM stops the run (KeyboardInterrupt: checkpoint, then shutdown).

    Later ones are only reported: a second signal (an impatient Ctrl-C, or `timeout`, which
    signals the program and then its whole process group) would otherwise cut the checkpoint
    short and lose the run's progress. The shutdown is bounded, so nothing waits forever.
    """
    signal.signal(signal.SIGINT, _already_stopping)
    signal.signal(signal.SIGTERM, _already_stopping)
    errors.note_stop_signal()
    raise KeyboardInterrupt


def _already_stopping(signum, frame):
    # os.write, not print: the handler may run in the middle of a print to the same stream.
    os.write(sys.stderr.fileno(), f'{signal.Signals(signum).name} ignored: already stopping '
                                  f'(saving a checkpoint, ending workers)\n'.encode())


def _parse_flags(argv):
    """absl's flag parsing with a bad flag value as one line, exit 2 (absl prints two, exit 1)."""
    try:
        return FLAGS(argv)
    except flags.Error as error:
        fail(str(error))


def execute(main_fn, takes_args=False):
    """absl.app.run with bad flags, errors.ConfigError, errors.RunError and KeyboardInterrupt
    turned into clean one-line exits. main_fn() gets the positional arguments if takes_args
    (else any is an error) and may return an exit status."""

    def wrapped(argv):
        # SIGTERM (e.g. from a job scheduler) ends a run as cleanly as Ctrl-C: checkpoint, stop.
        errors.note_stop_signal(False)
        signal.signal(signal.SIGINT, _stop_run)
        signal.signal(signal.SIGTERM, _stop_run)
        # TensorFlow's Python INFO lines (e.g. at every checkpoint) would break up the progress
        # lines; warnings and errors still show.
        logging.set_verbosity(logging.WARNING)
        if len(argv) > 1 and not takes_args:
            fail(f'unexpected arguments {argv[1:]}; use --gin_file / --gin_bindings / --run_dir')
        try:
            status = main_fn(argv[1:]) if takes_args else main_fn()
            # Done: a late Ctrl-C must not cut Python's own exit (its workers' cleanup) short.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            return status
        except errors.ConfigError as error:
            fail(str(error))
        except errors.RunError as error:
            fail(str(error), exit_code=1)
        except OSError as error:  # a full disk, a read-only or vanished run directory
            fail(errors.describe_os_error(error), exit_code=1)
        except BaseException as error:  # pylint: disable=broad-except
            if not errors.is_interrupt(error):
                raise
            # Saved and stopped; Python resets handlers to the default (kill) while it exits,
            # but leaves ignored signals ignored, so a late one cannot change the exit status.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            print('interrupted', file=sys.stderr)
            sys.exit(130)

    define_flags()
    app.run(wrapped, flags_parser=_parse_flags)
