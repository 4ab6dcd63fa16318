"""reproduce: a run's recorded command, parsed by today's code, against its operative config."""
import json

import gin

from common.launch import app
from common.system import gin_text
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


def test_an_option_added_since_is_compared_with_what_the_code_did_before_it(tmp_path):
    """An operative config from before an option existed lacks it: the run ran as the value
    the option was added with (reproduce.ADDED_FIELDS, ADDED, a paper's ADDED)."""
    paac_main.configure([f'{app.PROJECT_ROOT}/gin/paac/pong.gin'], [])
    today = gin.operative_config_str()
    gin.clear_config()
    assert "PAACConfig.seed_exact = False\n" in today and "AtariConfig.resize = 'area'\n" in today
    old = today.replace('PAACConfig.seed_exact = False\n', '').replace(
        "AtariConfig.resize = 'area'\n", '').replace("PAACConfig.compute_dtype = 'float32'\n", '')
    assert reproduce.differences(_run_dir(tmp_path, old)) == []
    (tmp_path / app.INVOCATION_FILE).write_text(json.dumps(
        {'paper': 'paac', 'gin_files': ['gin/paac/pong.gin'],
         'gin_bindings': ["PAACConfig.compute_dtype = 'bfloat16'",
                          "AtariConfig.resize = 'nearest'"]}))
    assert reproduce.differences(str(tmp_path)) == [
        "AtariConfig.resize = 'nearest' today; the run predates the option and ran as 'area' "
        'does',
        "PAACConfig.compute_dtype = 'bfloat16' today; the run predates the option and ran as "
        "'float32' does"]


def test_life_loss_options_tell_runs_apart_only_in_games_with_lives(tmp_path):
    """Fast DQN's preset before the life-loss options (2026-12-06) pressed FIRE after a lost
    life and kept the stack: a Breakout run of it differs from today's preset in both, a Pong
    run (no lives) in neither."""
    from dqn_tf import main as dqn_main  # pylint: disable=import-outside-toplevel
    for game, expected in (('pong', []), ('breakout', [
            'AtariConfig.fire_on_life_loss = False today; the run predates the option and ran '
            'as True does',
            'AtariConfig.life_loss_restarts_stack = True today; the run predates the option and '
            'ran as False does'])):
        bindings = [f"AtariConfig.game = '{game}'"]
        dqn_main.configure([f'{app.PROJECT_ROOT}/gin/dqn/pong.gin'], bindings)
        today = gin.operative_config_str()
        gin.clear_config()
        old = today.replace('AtariConfig.fire_on_life_loss = False\n', '').replace(
            'AtariConfig.life_loss_restarts_stack = True\n', '')
        assert old != today and 'AtariConfig.fire_on_life_loss' not in old
        run_dir = tmp_path / game
        run_dir.mkdir()
        (run_dir / app.INVOCATION_FILE).write_text(json.dumps(
            {'paper': 'dqn', 'gin_files': ['gin/dqn/pong.gin'], 'gin_bindings': bindings}))
        (run_dir / app.OPERATIVE_CONFIG_FILE).write_text(old)
        assert reproduce.differences(str(run_dir)) == expected, game


def test_a_published_run_names_a_repository_preset_bound_only_to_game_and_seed(tmp_path):
    paac_main.configure([f'{app.PROJECT_ROOT}/gin/paac/pong.gin'],
                        ["AtariConfig.game = 'breakout'", 'PAACConfig.seed = 3'])
    today = gin.operative_config_str()
    gin.clear_config()
    run_dir = _run_dir(tmp_path, today)
    (tmp_path / app.INVOCATION_FILE).write_text(json.dumps(
        {'paper': 'paac', 'gin_files': ['/elsewhere/my_pong.gin'],
         'gin_bindings': ["AtariConfig.game = 'breakout'", 'PAACConfig.seed = 3']}))
    record, problems = reproduce.preset_record(run_dir)
    assert record is None and problems == ['/elsewhere/my_pong.gin is not a preset under gin/']
    record, problems = reproduce.preset_record(run_dir, 'gin/paac/pong.gin')
    assert problems == [] and record == {
        'gin_files': ['gin/paac/pong.gin'],
        'gin_bindings': ["AtariConfig.game = 'breakout'", 'PAACConfig.seed = 3'],
        'started_as': {'gin_files': ['/elsewhere/my_pong.gin'],
                       'gin_bindings': ["AtariConfig.game = 'breakout'", 'PAACConfig.seed = 3']}}
    reproduce.write_preset(record, run_dir)
    assert reproduce.published_preset(run_dir) == (record['gin_files'], record['gin_bindings'])
    record, problems = reproduce.preset_record(run_dir, 'gin/paac/original_code.gin')
    assert record is None and "PAACConfig.entropy_coef = 0.02 today, 0.01 in the run" in problems
    assert reproduce.preset_problems(['gin/paac/pong.gin'], ['PAACConfig.num_envs = 16']) == [
        "'PAACConfig.num_envs = 16' binds more than the game or the seed"]
