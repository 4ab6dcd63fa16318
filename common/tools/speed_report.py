"""A paper's speed experiments reproduced as docs/reproductions/<paper>.md: per experiment a table
with our value and the paper's in the next column, a figure, and one line on how ours differs.

A paper's reproduce command measures its cells (each trial in a try, so a failed cell is reported
and the rest go on) and hands the results here; this module only summarizes, draws and writes.
"""
import dataclasses
import datetime
import math
import os
import platform
import statistics
import sys
import time
from typing import Callable, Optional, Sequence

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

from common.system import machine_load  # noqa: E402

FIGURE_SIZE = (8.0, 4.0)  # inches
DPI = 100


@dataclasses.dataclass
class Cell:
    """One cell of an experiment: its trials' values, or the error that ended it."""
    label: str
    values: list = dataclasses.field(default_factory=list)
    error: Optional[str] = None

    @property
    def measured(self):
        """Whether the cell has trials and no error."""
        return bool(self.values) and self.error is None

    @property
    def mean(self):
        return statistics.fmean(self.values) if self.values else math.nan

    @property
    def std(self):
        return statistics.stdev(self.values) if len(self.values) > 1 else 0.0

    @property
    def spread(self):
        """Standard deviation over mean: how well the trials agree."""
        return self.std / self.mean if self.values and self.mean else math.nan


def measure(cell, trial: Callable[[], float], stream=None):
    """Runs one trial of cell, appending its value; a trial that raises ends the cell with its
    one-line error (later trials of it are skipped), and the caller goes on to the next cell."""
    if cell.error is not None:
        return
    try:
        cell.values.append(float(trial()))
    except Exception as error:  # pylint: disable=broad-except  (reported, the rest go on)
        text = str(error).strip().splitlines()
        cell.error = f'{type(error).__name__}: {text[0] if text else ""}'[:200]
        if stream is not None:
            print(f'{cell.label}: failed ({cell.error})', file=stream, flush=True)


def measure_round_robin(cells, trial, trials, stream, unit='steps/s'):
    """trials rounds over cells ({key: Cell}), each measuring every cell once by trial(key) (a
    value, printed with unit), so slow drift of the machine spreads over all cells."""
    def printed(key):
        value = trial(key)
        print(f'{cells[key].label}: {value:,.0f} {unit}', file=stream, flush=True)
        return value

    for _ in range(trials):
        for key, cell in cells.items():
            measure(cell, lambda: printed(key), stream)
    return cells


def machine_line():
    """What measured: CPU model, usable cores, memory, and that no GPU did (on this host)."""
    model = platform.processor() or platform.machine()
    try:
        with open('/proc/cpuinfo') as f:
            names = [line.split(':', 1)[1].strip() for line in f if line.startswith('model name')]
        model = names[0] if names else model
    except OSError:
        pass
    cores = machine_load.usable_cores()
    memory = ''
    try:
        pages, page_size = os.sysconf('SC_PHYS_PAGES'), os.sysconf('SC_PAGE_SIZE')
        memory = f', {pages * page_size / 2**30:.0f} GiB RAM'
    except (ValueError, OSError, AttributeError):
        pass
    return f'{model}, {cores} usable CPU cores{memory}, Python {platform.python_version()}'


def markdown_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    lines += ['| ' + ' | '.join(str(value) for value in row) + ' |' for row in rows]
    return '\n'.join(lines)


def _finish(figure, axes, path, labels, y_label, title):
    """Labels, legend and grid of a bar figure, saved to path and closed."""
    axes.set_xticks(range(len(labels)))
    axes.set_xticklabels(labels, rotation=30, ha='right', fontsize=8)
    axes.set_ylabel(y_label)
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8)
    axes.grid(axis='y', alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def grouped_bars(path, labels, series, y_label, title):
    """One group of bars per label, one bar per (name, values) of series; NaN draws no bar."""
    figure, axes = plt.subplots(figsize=FIGURE_SIZE, dpi=DPI)
    width = 0.8 / max(len(series), 1)
    for index, (name, values) in enumerate(series):
        positions = [group + (index - (len(series) - 1) / 2) * width
                     for group in range(len(labels))]
        axes.bar(positions, [0.0 if math.isnan(value) else value for value in values], width,
                 label=name)
    _finish(figure, axes, path, labels, y_label, title)


def stacked_bars(path, labels, parts, y_label, title):
    """One bar per label, stacked from the (name, values) of parts in order; NaN counts 0."""
    figure, axes = plt.subplots(figsize=FIGURE_SIZE, dpi=DPI)
    bottoms = [0.0] * len(labels)
    for name, values in parts:
        heights = [0.0 if math.isnan(value) else value for value in values]
        axes.bar(range(len(labels)), heights, 0.6, bottom=bottoms, label=name)
        bottoms = [bottom + height for bottom, height in zip(bottoms, heights)]
    _finish(figure, axes, path, labels, y_label, title)


def lines(path, x_values, series, x_label, y_label, title, references=()):
    """One line with markers per (name, values) of series over x_values (NaN leaves a gap), and
    a dashed horizontal line per (name, value) of references."""
    figure, axes = plt.subplots(figsize=FIGURE_SIZE, dpi=DPI)
    for name, values in series:
        axes.plot(x_values, values, marker='o', label=name)
    for index, (name, value) in enumerate(references):
        axes.axhline(value, linestyle=('--', ':', '-.')[index % 3], color='gray', label=name)
    axes.set_xscale('log', base=2)
    axes.set_xticks(list(x_values))
    axes.set_xticklabels([str(value) for value in x_values])
    axes.set_xlabel(x_label)
    axes.set_ylabel(y_label)
    axes.set_title(title, fontsize=10)
    axes.legend(fontsize=8)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


@dataclasses.dataclass
class Experiment:
    """One reproduced table or figure: its markdown table, its figure's file name (in the
    report's directory), and how ours differs from the paper's and why."""
    title: str
    differs: str
    table: str
    figure: Optional[str] = None
    notes: str = ''


def write_report(path, paper, command, experiments, minutes, when=None):
    """Writes the report: the paper, the command, its date, machine and duration, then each
    experiment. Returns path."""
    when = when or datetime.datetime.now(datetime.timezone.utc)
    lines = [f'# {paper}: speed experiments reproduced', '',
             f'Written by `{command}` on {when:%Y-%m-%d %H:%M} UTC in {minutes:.1f} min; '
             f'machine: {machine_line()}. Our values are measured here; the paper\'s are '
             'printed beside them.', '']
    for experiment in experiments:
        lines += [f'## {experiment.title}', '', f'How ours differs: {experiment.differs}', '',
                  experiment.table, '']
        if experiment.notes:
            lines += [experiment.notes, '']
        if experiment.figure:
            lines += [f'![{experiment.title}]({experiment.figure})', '']
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, 'w') as f:
        f.write('\n'.join(lines))
    return path


def read_tables(path):
    """{experiment title: [row as {column: text}]} of a report write_report wrote, so that
    prose quoting a reproduction can be checked against it; an experiment's second table (in its
    notes) is '<title> #2', and so on."""
    tables, title = {}, None
    with open(path) as f:
        lines = [line.rstrip('\n') for line in f]
    for index, line in enumerate(lines):
        if line.startswith('## '):
            title = line[3:]
        elif (title and line.startswith('| ') and index + 1 < len(lines)
              and lines[index + 1].startswith('|---')):
            header = [cell.strip() for cell in line.strip('|').split('|')]
            rows = []
            for row in lines[index + 2:]:
                if not row.startswith('| '):
                    break
                rows.append(dict(zip(header, (cell.strip() for cell in
                                              row.strip().strip('|').split('|')))))
            count = sum(1 for key in tables if key == title or key.startswith(f'{title} #'))
            tables[title if not count else f'{title} #{count + 1}'] = rows
    return tables


def write_command_report(path, paper, module, experiments, start):
    """write_report for the command `python -m module` with this process's flags, timed from
    start (a time.perf_counter()); says where it wrote."""
    command = (f'python -m {module} ' + ' '.join(sys.argv[1:])).strip()
    write_report(path, paper, command, experiments, (time.perf_counter() - start) / 60)
    print(f'wrote {path}')
