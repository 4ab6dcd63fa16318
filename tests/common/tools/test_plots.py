"""The learning-curve figures: every run a line of its own look, the legend beside the axes."""
import matplotlib.pyplot as plt

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
