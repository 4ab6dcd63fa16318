"""The rows a resumed run will log again: a run killed between checkpoints resumes from the older
checkpoint and steps through the same env steps a second time, so the rows its files hold past
that checkpoint describe a stretch of training that no longer exists. At resume they move to
<name>.superseded.csv beside the file (nothing written is lost), and every reader (the score
window, common.results, common.compare, TensorBoard aside) sees one history."""
import csv
import io
import math
import os

from common.system import file_writes

# The run format's step-indexed CSV files.
STEP_FILES = ('metrics.csv', 'episodes.csv', 'eval.csv')
# metrics.csv's column naming how a session started (common/run/tracker.py writes it on the
# session's first row), and the values that mean a checkpoint existed when it did.
SESSION_START = 'session_start'
RESUMED_STARTS = {'resumed', 'carried'}


def superseded_path(path):
    """Where the rows of path that a resume superseded go: metrics.csv -> metrics.superseded.csv."""
    root, extension = os.path.splitext(path)
    return f'{root}.superseded{extension}'


def set_aside_rows_after(run_dir, env_steps, names=STEP_FILES):
    """Moves the rows of run_dir's step files whose env_steps is past env_steps (the checkpoint a
    run resumes from) to their superseded files (appended); returns {file name: rows moved} for
    the files that had any. The superseded rows are written before the file is replaced, which
    is atomic: an interruption leaves them in one place or both, never in neither."""
    moved = {}
    for name, path, rows in _step_files(run_dir, names):
        if not rows or 'env_steps' not in rows[0]:
            continue
        header, column = rows[0], rows[0].index('env_steps')
        kept, later = [header], []
        for row in rows[1:]:
            (later if _steps(row, column) > env_steps else kept).append(row)
        if not later:
            continue
        _append_rows(superseded_path(path), header, later)
        _replace_rows(path, kept)
        moved[name] = len(later)
    return moved


def progress_without_checkpoint(run_dir, checkpoint_every_steps=None):
    """Why run_dir's step files show training that a checkpoint should have kept, for a run
    directory that holds none: a session that resumed or was carried (its first row says so), or
    a row past the first checkpoint due (checkpoint_every_steps); None when its rows are those of
    sessions killed before their first checkpoint, which a new session sets aside and redoes."""
    furthest, started = 0, set()
    for _, _, rows in _step_files(run_dir, STEP_FILES):
        for row in rows[1:]:
            row = dict(zip(rows[0], row))
            steps = _number(row.get('env_steps'))
            if math.isfinite(steps):
                furthest = max(furthest, int(steps))
            started.add((row.get(SESSION_START) or '').strip())
    resumed = sorted(started & RESUMED_STARTS)
    if resumed:
        return f'a session {resumed[0]} from a checkpoint, rows to step {furthest:,}'
    if checkpoint_every_steps and furthest > checkpoint_every_steps:
        return (f'rows to step {furthest:,}, past the checkpoint due at '
                f'{checkpoint_every_steps:,}')
    return None


def resumed_history(rows, column='env_steps'):
    """A run's CSV rows as one history, for files whose superseded rows were not set aside (runs
    older than set_aside_rows_after): a run resumed from a checkpoint older than its last rows
    logs those steps again, so the rows it superseded, those past the first step logged after
    the resume, are left out."""
    history = []
    for row in rows:
        steps = _number(row.get(column))
        while history and _number(history[-1].get(column)) > steps:
            history.pop()
        history.append(row)
    return history


def read_history(path, upto=math.inf):
    """The rows of the step file at path as dicts ([] where there is none), as one history
    (resumed_history), up to step upto: what a run restored at upto has lived through."""
    if not os.path.exists(path):
        return []
    with open(path, newline='') as f:
        rows = resumed_history(list(csv.DictReader(f)))
    return rows if upto == math.inf else [
        row for row in rows if _number(row.get('env_steps')) <= upto]


def _step_files(run_dir, names):
    """(name, path, rows: header first) of each of run_dir's files named in names that exists."""
    for name in names:
        path = os.path.join(run_dir, name)
        if not os.path.isfile(path):
            continue
        with file_writes.naming(path):
            with open(path, newline='') as f:
                yield name, path, list(csv.reader(f))


def _steps(row, column):
    """The row's env_steps; -inf where it has none (a row without a step is never moved)."""
    value = _number(row[column] if column < len(row) else '')
    return value if math.isfinite(value) else -math.inf


def _append_rows(path, header, rows):
    is_new = not os.path.exists(path) or os.path.getsize(path) == 0
    with file_writes.naming(path):
        with open(path, 'a', newline='') as f:
            writer = csv.writer(f)
            if is_new:
                writer.writerow(header)
            writer.writerows(rows)
            f.flush()
            os.fsync(f.fileno())


def _replace_rows(path, rows):
    text = io.StringIO(newline='')
    csv.writer(text).writerows(rows)
    temporary = path + '.tmp'
    with file_writes.naming(path):
        with open(temporary, 'w', newline='') as f:
            f.write(text.getvalue())
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan
