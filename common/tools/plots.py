"""Learning curves and throughput of runs in the common run format, drawn with matplotlib.

Reads what common.compare reads (invocation.json, metrics.csv, eval.csv), so runs of every paper
share one figure; runs of different games never do (their scores are on different scales), so
callers draw a game's runs alone, its figures named with file_suffix(game). The Agg backend
needs no display; figures are 800 px wide at 100 dpi plus the legend beside them, sized to be
read in a README. draw_by_paper stacks a panel per paper, each with its own legend, for figures
of more runs than one legend holds (docs/results' every published run of a game).
"""
import math
import os
import re
import textwrap

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

from common.run import superseded  # noqa: E402
from common.tools import run_clock  # noqa: E402
from common.tools import run_files  # noqa: E402

FIGURE_SIZE = (8.0, 4.5)  # inches
TITLE_CHARACTERS_PER_INCH = 11  # of a medium-sized title, so that it wraps inside the axes
DPI = 100
# (file name, x column, y column, x label, y label): one PNG each.
FIGURES = (
    ('score_vs_frames.png', 'frames', 'score_mean_100', 'emulator frames (millions)',
     'score (100-episode mean)'),
    ('score_vs_hours.png', 'hours', 'score_mean_100',
     "training hours (the run's own clock: time held or starved of CPU left out)",
     'score (100-episode mean)'),
    ('steps_per_sec.png', 'hours', 'steps_per_sec',
     "training hours (the run's own clock)", 'environment steps per second'),
)
X_SCALE = {'frames': 1e-6, 'hours': 1.0, 'env_steps': 1e-6}
# Drawn where a run has the column (metrics.csv's rss_mb, since 2026-12-06): memory over a run,
# where a leak shows (common.compare --plot).
MEMORY_FIGURE = ('rss_mb.png', 'env_steps', 'rss_mb', 'environment steps (millions)',
                 "resident memory of the run's process tree (MB)")


# metrics.csv's last column: on each session's first row 'new', 'resumed' or 'carried' (resumed
# on another machine from a carried run's portable state); older runs lack it.
SESSION_START = superseded.SESSION_START
CARRIED = 'carried'


def load_run(run_dir, label):
    """The curves of one run: {'label', 'metrics': {column: [...]}, 'eval': {column: [...]},
    'carried': {x column: [...]}}.

    Frames of evaluation points are env_steps times the run's frames per step (from
    metrics.csv); hours are the run's own clock (common/tools/run_clock.py: metrics.csv's wall_time,
    resumes included, less the intervals it was held or starved of CPU). 'carried' holds, for
    each x column of FIGURES, the x of every row where a session started carried (empty lists
    for a run without the session_start column).
    """
    rows = superseded.read_history(os.path.join(run_dir, 'metrics.csv'))
    columns = {name: [run_files.number(row.get(name)) for row in rows]
               for name in ('env_steps', 'frames', 'score_mean_100', 'steps_per_sec', 'rss_mb')}
    evals = run_files.read_csv(os.path.join(run_dir, 'eval.csv'))
    columns['hours'] = run_clock.own_hours(rows, run_clock.read_cores(run_dir), evals)
    frames_per_step = 1.0
    for steps, frames in zip(columns['env_steps'], columns['frames']):
        if steps > 0 and not math.isnan(frames):
            frames_per_step = frames / steps
            break
    eval_steps = [run_files.number(row.get('env_steps')) for row in evals]
    eval_columns = {
        'frames': [steps * frames_per_step for steps in eval_steps],
        'hours': [_hours_at(steps, columns) for steps in eval_steps],
        'score_mean_100': [run_files.number(row.get('score_mean')) for row in evals],
    }
    carried_rows = [index for index, row in enumerate(rows)
                    if (row.get(SESSION_START) or '').strip() == CARRIED]
    carried = {x_column: [columns[x_column][index] for index in carried_rows]
               for x_column in sorted({figure[1] for figure in FIGURES})}
    return {'label': label, 'metrics': columns, 'eval': eval_columns, 'carried': carried}


def _hours_at(env_steps, columns):
    """Training hours when the run reached env_steps (the first metrics row at or after it)."""
    for steps, hours in zip(columns['env_steps'], columns['hours']):
        if steps >= env_steps:
            return hours
    return columns['hours'][-1] if columns['hours'] else math.nan


def _points(xs, ys, x_scale):
    pairs = [(x * x_scale, y) for x, y in zip(xs, ys) if not (math.isnan(x) or math.isnan(y))]
    return [x for x, _ in pairs], [y for _, y in pairs]


def _on_curve(x, xs, ys):
    """The curve's y at x (drawn points xs, ys, x in order): linear between its neighbours, the
    end's y beyond an end; so a mark sits on the line even where its own row has no score yet."""
    if x <= xs[0]:
        return ys[0]
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return ys[-1]


# Ten colours, then the same ten dashed, then dotted: every run of a figure is its own line.
LINE_STYLES = ('-', '--', ':', '-.')


def line_style(index):
    """(colour, dash) of the index-th run of a figure: tab10's colours, then again dashed, ..."""
    colours = plt.get_cmap('tab10').colors
    return colours[index % len(colours)], LINE_STYLES[index // len(colours) % len(LINE_STYLES)]


def _draw_runs(axes, runs, x_column, y_column):
    """A line per run on axes (and, for scores, its evaluation points as markers and a vertical
    tick on its curve where a session started carried), each run its own colour and dash by its
    index in runs."""
    x_scale = X_SCALE[x_column]
    for index, run in enumerate(runs):
        xs, ys = _points(run['metrics'][x_column], run['metrics'][y_column], x_scale)
        colour, dash = line_style(index)
        (line,) = axes.plot(xs, ys, label=run['label'], linewidth=1.5, color=colour,
                            linestyle=dash)
        if y_column == 'score_mean_100':
            eval_xs, eval_ys = _points(run['eval'][x_column], run['eval'][y_column], x_scale)
            if eval_xs:
                axes.plot(eval_xs, eval_ys, linestyle='none', marker='o', markersize=5,
                          color=line.get_color(), label=f"{run['label']} (evaluation)")
            carried_xs = [x * x_scale for x in run.get('carried', {}).get(x_column, ())
                          if not math.isnan(x)]
            if carried_xs and xs:
                axes.plot(carried_xs, [_on_curve(x, xs, ys) for x in carried_xs],
                          linestyle='none', marker='|', markersize=14, markeredgewidth=2,
                          color=line.get_color(), label=f"{run['label']} (carried here)")
    axes.grid(True, alpha=0.3)


def _wrapped(title, inches):
    """title wrapped to a width of inches (a sweep's title names its whole grid)."""
    return textwrap.fill(title, int(TITLE_CHARACTERS_PER_INCH * inches))


def draw(runs, x_column, y_column, x_label, y_label, title=None):
    """One figure with a line per run (and, for scores, its evaluation points as markers and a
    vertical tick on its curve where a session started carried), each run its own colour and
    dash, the legend beside the axes where it hides no curve."""
    width = FIGURE_SIZE[0] + (3.2 if runs else 0.0)
    figure, axes = plt.subplots(figsize=(width, FIGURE_SIZE[1]), dpi=DPI)
    _draw_runs(axes, runs, x_column, y_column)
    axes.set_xlabel(x_label)
    axes.set_ylabel(y_label)
    if title:  # wrapped to the axes' width
        axes.set_title(_wrapped(title, FIGURE_SIZE[0]), fontsize='medium')
    if runs:
        axes.legend(fontsize='x-small', loc='upper left', bbox_to_anchor=(1.01, 1.0),
                    borderaxespad=0.0)
    figure.tight_layout()
    return figure


# The panels of draw_by_paper, top first; a paper not named here comes after them, by name.
PAPER_ORDER = ('paac', 'ga3c', 'dqn', 'accel')
PANEL_HEIGHT = 2.4  # inches: a paper's axes at least, taller where its legend needs it
LEGEND_ROWS = 16  # a legend's entries per column before it takes another column ...
LEGEND_COLUMNS = 3  # ... up to this many; past that its columns grow, and its panel with them
PANEL_SPACE = 0.75  # inches per panel for its title and tick labels
FIGURE_MARGINS = 1.0  # inches for the figure's title and the x label


def paper_order(papers):
    """papers in the order of their panels: PAPER_ORDER's, then any other by name."""
    return sorted(papers, key=lambda paper: (
        PAPER_ORDER.index(paper) if paper in PAPER_ORDER else len(PAPER_ORDER), paper))


def legend_columns(entries):
    """Columns of a legend of that many entries: one up to LEGEND_ROWS, at most LEGEND_COLUMNS."""
    return min(LEGEND_COLUMNS, max(1, math.ceil(entries / LEGEND_ROWS)))


def load_by_paper(run_dirs, label=lambda run_dir: os.path.basename(os.path.normpath(run_dir))):
    """{paper: [load_run(run_dir, label(run_dir)), ...]} by each run's invocation.json
    (run_files.read_paper), papers in paper_order, runs in the order given. A run is labelled
    by its directory name: its panel's title names the paper."""
    groups = {}
    for run_dir in run_dirs:
        groups.setdefault(run_files.read_paper(run_dir), []).append(
            load_run(run_dir, label(run_dir)))
    return {paper: groups[paper] for paper in paper_order(groups)}


def draw_by_paper(runs_by_paper, x_column, y_column, x_label, y_label, title=None):
    """One figure with a panel (axes) per paper of runs_by_paper ({paper: runs from load_run}),
    stacked in paper_order on one x axis, each titled with its paper and drawn as draw draws its
    runs (colours and dashes by a run's index within its panel), its legend beside it. A panel
    is PANEL_HEIGHT tall, or as tall as its legend: legend_columns(entries) columns, so that
    every entry shows. The figure is as wide as the widest legend needs."""
    papers = paper_order(paper for paper, runs in runs_by_paper.items() if runs)
    if not papers:
        return draw([], x_column, y_column, x_label, y_label, title)
    figure, panels = plt.subplots(len(papers), 1, sharex=True, squeeze=False, dpi=DPI,
                                  figsize=(FIGURE_SIZE[0], PANEL_HEIGHT * len(papers)))
    panels = list(panels[:, 0])
    legends = []
    for axes, paper in zip(panels, papers):
        runs = runs_by_paper[paper]
        _draw_runs(axes, runs, x_column, y_column)
        axes.set_ylabel(y_label)
        axes.set_title(f"{paper}: {len(runs)} run{'s' if len(runs) != 1 else ''}",
                       fontsize='medium', loc='left', fontweight='bold')
        axes.tick_params(labelbottom=True)  # each panel's hours or frames read off it
        entries = len(axes.get_legend_handles_labels()[1])
        legends.append(axes.legend(fontsize='x-small', loc='upper left',
                                   bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                                   ncols=legend_columns(entries)))
    panels[-1].set_xlabel(x_label)
    if title:
        figure.suptitle(_wrapped(title, FIGURE_SIZE[0]), fontsize='large')
    # A legend's size is in points whatever the figure's: measure them, then size the figure.
    renderer = figure.canvas.get_renderer()
    extents = [legend.get_window_extent(renderer) for legend in legends]
    heights = [max(PANEL_HEIGHT, extent.height / DPI + 0.1) for extent in extents]
    legend_width = max(extent.width for extent in extents) / DPI
    figure.set_size_inches(FIGURE_SIZE[0] + legend_width + 0.2,
                           sum(heights) + PANEL_SPACE * len(papers) + FIGURE_MARGINS)
    panels[0].get_gridspec().set_height_ratios(heights)
    figure.tight_layout()
    return figure


def file_suffix(game):
    """'-<game>' for figure file names (score_vs_hours-breakout.png); characters a file name
    should not hold (a gymnasium id's '/') become '_', and a run with no game is '-unknown'."""
    return '-' + ('unknown' if game == '?' else re.sub(r'[^\w.-]+', '_', game))


def plot_runs(runs, out_dir, title=None, suffix=''):
    """Writes the FIGURES for runs (from load_run, all of one game) into out_dir, each file name
    with suffix before its .png; returns the paths."""
    return _write_figures(out_dir, suffix, lambda *figure: draw(runs, *figure, title))


def plot_memory(runs, out_dir, title=None, suffix=''):
    """Writes MEMORY_FIGURE for the runs (from load_run) that recorded rss_mb into out_dir;
    returns its path, None when no run has the column."""
    recorded = [run for run in runs
                if any(not math.isnan(value) for value in run['metrics']['rss_mb'])]
    if not recorded:
        return None
    file_name, *figure = MEMORY_FIGURE
    drawn = draw(recorded, *figure, title)
    stem, extension = os.path.splitext(file_name)
    path = os.path.join(out_dir, stem + suffix + extension)
    os.makedirs(out_dir, exist_ok=True)
    drawn.savefig(path)
    plt.close(drawn)
    return path


def plot_by_paper(runs_by_paper, out_dir, title=None, suffix=''):
    """Writes the FIGURES for runs_by_paper (from load_by_paper, all of one game) into out_dir,
    a panel per paper (draw_by_paper), each file name with suffix before its .png; returns the
    paths."""
    return _write_figures(out_dir, suffix,
                          lambda *figure: draw_by_paper(runs_by_paper, *figure, title))


def _write_figures(out_dir, suffix, draw_figure):
    """Each of FIGURES drawn by draw_figure(x_column, y_column, x_label, y_label), written."""
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for file_name, x_column, y_column, x_label, y_label in FIGURES:
        figure = draw_figure(x_column, y_column, x_label, y_label)
        stem, extension = os.path.splitext(file_name)
        path = os.path.join(out_dir, stem + suffix + extension)
        figure.savefig(path)
        plt.close(figure)
        paths.append(path)
    return paths


def draw_bench(rows, ceiling):
    """The bench table as horizontal bars: each row's steps/s (its window spread as an error bar)
    and, where an env-only row ran, a line at the best env-only rate."""
    figure, axes = plt.subplots(figsize=(FIGURE_SIZE[0], 0.9 + 0.35 * len(rows)), dpi=DPI)
    names = [row['name'] for row in rows][::-1]
    rates = [row['steps_per_sec'] for row in rows][::-1]
    errors = [[max(rate - row['min'], 0.0) for rate, row in zip(rates, rows[::-1])],
              [max(row['max'] - rate, 0.0) for rate, row in zip(rates, rows[::-1])]]
    axes.barh(names, rates, xerr=errors, color='tab:blue', ecolor='black', capsize=3)
    if ceiling:
        axes.axvline(ceiling, color='tab:red', linestyle='--', label='best env-only rate')
        axes.legend(fontsize='small', loc='lower right')
    axes.set_xlabel('environment steps per second (bars: window min to max)')
    axes.grid(True, axis='x', alpha=0.3)
    figure.tight_layout()
    return figure


def plot_bench(rows, ceiling, path):
    """Writes draw_bench(rows, ceiling) to path (a PNG)."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    figure = draw_bench(rows, ceiling)
    figure.savefig(path)
    plt.close(figure)
    return path
