"""The paper packages beside common/, found on disk, so the shared tools reach every paper
without common/ importing one by name.

A paper package is a directory `<paper>_tf/` next to `common/` holding `main.py` (its entry
point: `configure`, `main`, `load_policy`) and, optionally, `bench_rows.py` (`ROWS`: bench row
name -> function of the bench settings returning steps per second). Adding a package adds its
rows to `python -m common.bench` and its runs to `python -m common.evaluate`; nothing in common/
changes.
"""
import importlib
import os

from common.launch import app
from common.system import errors

SUFFIX = '_tf'


def papers():
    """The paper names (`paac` for `paac_tf/`), sorted, of every package with a main.py."""
    return sorted(name[:-len(SUFFIX)] for name in os.listdir(app.PROJECT_ROOT)
                  if name.endswith(SUFFIX)
                  and os.path.isfile(os.path.join(app.PROJECT_ROOT, name, 'main.py')))


def entry_point(paper):
    """The `main` module of a paper package; ConfigError naming the known papers if none."""
    known = papers()
    if paper not in known:
        raise errors.ConfigError(f'paper {paper!r} has no package {paper}{SUFFIX}/ with a main.py; '
                                 f'known: {", ".join(known)}')
    return importlib.import_module(f'{paper}{SUFFIX}.main')


def bench_rows():
    """{row name: measure(settings)} of every paper package's bench_rows.py, in paper order."""
    rows = {}
    for paper in papers():
        if os.path.isfile(os.path.join(app.PROJECT_ROOT, f'{paper}{SUFFIX}', 'bench_rows.py')):
            rows.update(importlib.import_module(f'{paper}{SUFFIX}.bench_rows').ROWS)
    return rows
