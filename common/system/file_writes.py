"""Writes to a run directory whose errors name their file: an OSError raised by write() or
close() carries no path, and a full disk or read-only directory must be reported with one."""
import contextlib
import json


@contextlib.contextmanager
def naming(path):
    """Re-raises an OSError of the block as one that names path (if it names none)."""
    try:
        yield
    except OSError as error:
        if error.filename:
            raise
        raise OSError(error.errno, error.strerror or str(error), path) from None


def write_json(path, value):
    """json.dump(value) into path (indented), naming path in any OSError."""
    with naming(path):
        with open(path, 'w') as f:
            json.dump(value, f, indent=2)


def write_text(path, text):
    with naming(path):
        with open(path, 'w') as f:
            f.write(text)
