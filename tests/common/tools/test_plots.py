"""The learning-curve figures: every run a line of its own look, the legend beside the axes."""
import collections
import json
import os

import matplotlib.pyplot as plt
import pytest

from common.tools import plots


def _run(label, offset):
    metrics = {'env_steps': [0.0, 1e6], 'frames': [0.0, 4e6], 'hours': [0.0, 1.0],
               'score_mean_100': [-21.0 + offset, -10.0 + offset], 'steps_per_sec': [1e3, 1e3]}
    return {'label': label, 'metrics': metrics,
            'eval': {'frames': [], 'hours': [], 'score_mean_100': []}}


def test_seventeen_runs_are_seventeen_looks_and_the_legend_hides_no_curve():
    runs = [_run(f'run {index}', index) for index in range(17)]
    figure = plots.draw(runs, 'frames', 'score_mean_100', 'frames', 'score', 'pong')
    axes = figure.axes[0]
    looks = [(line.get_color(), line.get_linestyle()) for line in axes.get_lines()]
    assert len(looks) == 17 and len(set(looks)) == 17
    figure.canvas.draw()
    legend = axes.get_legend().get_window_extent()
    assert legend.x0 >= axes.get_window_extent().x1  # beside the axes, not over the curves
    plt.close(figure)


def test_a_long_title_wraps_inside_the_figure():
    title = ('paac on pong: PAACConfig.num_envs = [16, 64, 256], '
             'PAACConfig.learning_rate_per_env = [0.0007], 5,000,000 steps per point')
    figure = plots.draw([_run('a', 0)], 'frames', 'score_mean_100', 'frames', 'score', title)
    figure.canvas.draw()
    text = figure.axes[0].title
    assert '\n' in text.get_text() and text.get_text().replace('\n', ' ') == title
    extent = text.get_window_extent()
    assert extent.x0 >= 0 and extent.x1 <= figure.bbox.x1
    plt.close(figure)


def _write_metrics(run_dir, header, rows):
    """A run directory holding only metrics.csv (what load_run needs of it)."""
    run_dir.mkdir()
    (run_dir / 'metrics.csv').write_text(
        ','.join(header) + '\n' + ''.join(','.join(str(v) for v in row) + '\n' for row in rows))
    return str(run_dir)


METRICS = ('wall_time', 'env_steps', 'frames', 'updates', 'episodes', 'score_mean_100',
           'steps_per_sec')


def _legend(figure):
    return [text.get_text() for text in figure.axes[0].get_legend().get_texts()]


def test_a_carried_resume_is_a_tick_on_the_score_curves_with_its_legend_entry(tmp_path):
    """Resumed in place at 2M steps, then carried to another machine at 3M: one tick, at the
    carried row's frames, on the curve."""
    run_dir = _write_metrics(tmp_path / 'dqn-pong-1', METRICS + ('session_start',), [
        (3600, 1e6, 4e6, 10, 2, -21.0, 100, 'new'),
        (7200, 2e6, 8e6, 20, 5, -20.0, 100, 'resumed'),
        (10800, 3e6, 12e6, 30, 9, -18.0, 100, 'carried'),
        (14400, 4e6, 16e6, 40, 12, -16.0, 100, ''),
    ])
    run = plots.load_run(run_dir, 'dqn')
    assert run['carried']['frames'] == [12e6]
    assert run['carried']['hours'] == [run['metrics']['hours'][2]]
    for x_column in ('frames', 'hours'):
        figure = plots.draw([run], x_column, 'score_mean_100', x_column, 'score')
        assert _legend(figure) == ['dqn', 'dqn (carried here)']
        (curve, tick) = figure.axes[0].get_lines()
        assert tick.get_marker() == '|' and tick.get_linestyle() == 'None'
        assert tick.get_color() == curve.get_color()
        # The carried row's x, scaled as the curve is (frames in millions), and its score.
        expected_x = {'frames': 12.0, 'hours': run['metrics']['hours'][2]}[x_column]
        assert list(tick.get_xdata()) == pytest.approx([expected_x])
        assert list(curve.get_xdata())[2] == pytest.approx(expected_x)
        assert list(tick.get_ydata()) == [-18.0]
        plt.close(figure)
    rates = plots.draw([run], 'hours', 'steps_per_sec', 'hours', 'steps/s')
    assert _legend(rates) == ['dqn']  # the throughput figure marks no session
    plt.close(rates)


def test_no_carried_resume_means_no_carried_entry(tmp_path):
    """A run started new and resumed in place, and an older run without the column."""
    resumed = _write_metrics(tmp_path / 'resumed', METRICS + ('session_start',), [
        (3600, 1e6, 4e6, 10, 2, -21.0, 100, 'new'),
        (7200, 2e6, 8e6, 20, 5, -20.0, 100, ''),
        (10800, 3e6, 12e6, 30, 9, -18.0, 100, 'resumed'),
    ])
    older = _write_metrics(tmp_path / 'older', METRICS, [
        (3600, 1e6, 4e6, 10, 2, -21.0, 100),
        (7200, 2e6, 8e6, 20, 5, -20.0, 100),
    ])
    runs = [plots.load_run(resumed, 'resumed'), plots.load_run(older, 'older')]
    assert [run['carried'] for run in runs] == [{'frames': [], 'hours': []}] * 2
    for x_column in ('frames', 'hours'):
        figure = plots.draw(runs, x_column, 'score_mean_100', x_column, 'score')
        assert _legend(figure) == ['resumed', 'older']
        assert len(figure.axes[0].get_lines()) == 2
        plt.close(figure)


# 40 runs of three papers (none of GA3C), more than one legend beside one axes holds.
FAKE_RUNS = {'accel': 26, 'paac': 9, 'dqn': 5}


def _fake_runs(tmp_path):
    """Run directories (metrics.csv, invocation.json, every third an eval.csv, every seventh
    carried once), listed by name: accel's first, so any panel order is the figure's own."""
    run_dirs = []
    for paper, count in FAKE_RUNS.items():
        for index in range(count):
            name = f'{paper}-pong-a-long-descriptive-run-name-{index}'
            starts = ('new', '', 'carried' if index % 7 == 3 else 'resumed', '')
            run_dir = _write_metrics(tmp_path / name, METRICS + ('session_start',), [
                (3600 * (row + 1), 1e6 * (row + 1), 4e6 * (row + 1), 10, 2,
                 -21.0 + row * index / 4, 100 + index, start)
                for row, start in enumerate(starts)])
            (tmp_path / name / 'invocation.json').write_text(json.dumps({'paper': paper}))
            if index % 3 == 0:
                (tmp_path / name / 'eval.csv').write_text(
                    'wall_time,env_steps,episodes,score_mean,seconds\n'
                    f'3000,1000000,30,{-20.0 + index / 4},60\n'
                    f'10000,3000000,30,{-18.0 + index / 4},60\n')
            run_dirs.append(run_dir)
    return sorted(run_dirs)


def _all_runs_figure(run_dirs, figure_spec):
    """The all-runs figure common.results draws of run_dirs, a panel per paper."""
    _, x_column, y_column, x_label, y_label = figure_spec
    return plots.draw_by_paper(plots.load_by_paper(run_dirs), x_column, y_column, x_label,
                               y_label, 'pong: every published run')


@pytest.mark.parametrize('figure_spec', plots.FIGURES, ids=[spec[0] for spec in plots.FIGURES])
def test_forty_runs_of_three_papers_are_a_panel_per_paper_with_every_legend_entry_shown(
        tmp_path, figure_spec):
    run_dirs = _fake_runs(tmp_path)
    figure = _all_runs_figure(run_dirs, figure_spec)
    panels = figure.axes
    # (c) A panel per paper, in the papers' order, titled with its paper.
    assert [axes.get_title(loc='left').split(':')[0] for axes in panels] == [
        'paac', 'dqn', 'accel']
    assert all(axes.get_legend() is not None for axes in panels)
    # (a) Every run exactly once, in its paper's panel, with its evaluation and carried entries
    # where it has them (on the score figures), and nothing else.
    scores = figure_spec[2] == 'score_mean_100'
    expected = collections.Counter()
    for run_dir in run_dirs:
        name = os.path.basename(run_dir)
        index = int(name.rsplit('-', 1)[1])
        expected[name] += 1
        if scores and index % 3 == 0:
            expected[f'{name} (evaluation)'] += 1
        if scores and index % 7 == 3:
            expected[f'{name} (carried here)'] += 1
    shown = collections.Counter()
    for axes in panels:
        paper = axes.get_title(loc='left').split(':')[0]
        texts = [text.get_text() for text in axes.get_legend().get_texts()]
        assert all(text.startswith(f'{paper}-') for text in texts)
        shown.update(texts)
        # Each run of a panel its own colour and dash, counted within the panel.
        looks = [(line.get_color(), line.get_linestyle()) for line in axes.get_lines()
                 if line.get_linestyle() != 'None']
        assert len(looks) == FAKE_RUNS[paper] == len(set(looks))
    assert shown == expected
    # (b) Every legend whole inside the figure, beside its own panel, over no other legend.
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    extents = [axes.get_legend().get_window_extent(renderer) for axes in panels]
    for axes, extent in zip(panels, extents):
        assert figure.bbox.x0 <= extent.x0 and extent.x1 <= figure.bbox.x1
        assert figure.bbox.y0 <= extent.y0 and extent.y1 <= figure.bbox.y1
        assert extent.x0 >= axes.get_window_extent(renderer).x1
    for upper, lower in zip(extents, extents[1:]):
        assert lower.y1 <= upper.y0
    assert max(len(axes.get_legend().get_texts()) for axes in panels) > plots.LEGEND_ROWS
    plt.close(figure)


def test_legends_take_columns_up_to_three_and_papers_keep_their_order():
    assert [plots.legend_columns(entries) for entries in (1, 16, 17, 32, 33, 48, 49, 90)] == [
        1, 1, 2, 2, 3, 3, 3, 3]
    assert plots.paper_order(['accel', 'other', 'dqn', 'paac', 'ga3c']) == [
        'paac', 'ga3c', 'dqn', 'accel', 'other']


@pytest.mark.slow
def test_the_per_paper_figures_are_written_with_the_suffix(tmp_path):
    (tmp_path / 'runs').mkdir()
    run_dirs = _fake_runs(tmp_path / 'runs')
    paths = plots.plot_by_paper(plots.load_by_paper(run_dirs), str(tmp_path / 'out'),
                                title='pong: every published run', suffix='-pong')
    assert [os.path.basename(path) for path in paths] == [
        'score_vs_frames-pong.png', 'score_vs_hours-pong.png', 'steps_per_sec-pong.png']
    for path in paths:
        with open(path, 'rb') as f:
            assert f.read(8) == b'\x89PNG\r\n\x1a\n'
