"""reproduce: a run's recorded command, parsed by today's code, against its operative config."""
import json

import gin

from common.launch import app
from common.run import gin_text
from common.tools import reproduce
from paac_tf import main as paac_main

_CONFIG = """# Parameters for PAACConfig:
# ==============================================================================
PAACConfig.entropy_coef = 0.01
PAACConfig.torso_kwargs = {'hidden_sizes': (64,
                                            64)}
make_pool.kind = 'process'
"""


def test_operative_bindings_reads_values_over_several_lines():
    assert gin_text.operative_bindings(_CONFIG) == {
        'PAACConfig.entropy_coef': '0.01',
        'PAACConfig.torso_kwargs': "{'hidden_sizes': (64, 64)}",
        'make_pool.kind': "'process'"}


def _run_dir(tmp_path, operative_text):
    (tmp_path / app.INVOCATION_FILE).write_text(json.dumps(
        {'paper': 'paac', 'gin_files': ['gin/paac/pong.gin'], 'gin_bindings': []}))
    (tmp_path / app.OPERATIVE_CONFIG_FILE).write_text(operative_text)
    return str(tmp_path)


def test_a_run_that_today_s_code_reproduces_has_no_differences_and_a_changed_one_is_named(
        tmp_path):
    paac_main.configure([f'{app.PROJECT_ROOT}/gin/paac/pong.gin'], [])
    today = gin.operative_config_str()
    gin.clear_config()
    assert reproduce.differences(_run_dir(tmp_path, today)) == []
    changed = today.replace('PAACConfig.entropy_coef = 0.01', 'PAACConfig.entropy_coef = 0.02')
    assert reproduce.differences(_run_dir(tmp_path, changed)) == [
        'PAACConfig.entropy_coef = 0.01 today, 0.02 in the run']
    dropped = today.replace('PAACConfig.loss_scale = 5.0\n', '')
    assert reproduce.differences(_run_dir(tmp_path, dropped)) == [
        'PAACConfig.loss_scale = 5.0 today, absent in the run']


def test_a_command_that_no_longer_parses_is_said_so(tmp_path):
    run_dir = _run_dir(tmp_path, _CONFIG)
    (tmp_path / app.INVOCATION_FILE).write_text(json.dumps(
        {'paper': 'paac', 'gin_files': ['gin/paac/pong.gin'],
         'gin_bindings': ['PAACConfig.alternating_halves = True']}))
    (line,) = reproduce.differences(run_dir)
    assert line.startswith('the recorded command no longer parses: ')
    assert "bind PAACConfig.sampler = 'alternating' instead" in line
