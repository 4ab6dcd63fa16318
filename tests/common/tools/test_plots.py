"""The learning-curve figures: every run a line of its own look, the legend beside the axes."""
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
