"""env_probe: the environment-only rate recorded with a session's machine, once per boot."""
import json

import gin
import pytest

from common.envs import atari
from common.envs import env_probe
from common.envs import gym as gym_envs
from common.launch import app
from common.system import errors
from common.system import machine_load

PONG = atari.AtariConfig(game='pong')


def test_a_probe_steps_the_game_and_reports_its_rates():
    result = env_probe.probe(PONG, 0.3)
    assert result['game'] == 'pong' and result['variant'] == 'nature'
    assert result['env_steps'] >= 100 and result['env_steps'] % 100 == 0
    assert 0.3 <= result['wall_seconds'] < 5 and 0 < result['cpu_seconds']
    assert result['env_steps_per_cpu_second'] == pytest.approx(
        result['env_steps'] / result['cpu_seconds'], rel=1e-2)
    assert result['env_steps_per_sec'] == pytest.approx(
        result['env_steps'] / result['wall_seconds'], rel=1e-2)


def test_a_session_probes_once_per_boot_and_only_atari(tmp_path, monkeypatch):
    calls = []
    measured = {'game': 'pong', 'env_steps_per_cpu_second': 6123.4}
    monkeypatch.setattr(env_probe, 'probe', lambda config, seconds: calls.append(seconds)
                        or dict(measured))
    assert env_probe.session_probe(PONG, str(tmp_path)) == measured
    assert env_probe.session_probe(PONG, str(tmp_path)) == measured  # from the cache
    assert calls == [10.0]
    other_caps = atari.AtariConfig(game='pong', noop_max=0, max_episode_steps=100)
    assert env_probe.session_probe(other_caps, str(tmp_path)) == measured and len(calls) == 1
    env_probe.session_probe(atari.AtariConfig(game='breakout'), str(tmp_path))
    assert len(calls) == 2  # another game is another probe
    assert env_probe.session_probe(gym_envs.GymConfig(), str(tmp_path)) is None
    gin.parse_config('env_probe.seconds = 0')
    assert env_probe.session_probe(PONG, str(tmp_path / 'other')) is None and len(calls) == 2
    gin.clear_config()
    gin.parse_config("env_probe.seconds = 'ten'")
    with pytest.raises(errors.ConfigError, match=r"env_probe.seconds='ten'; allowed: a number"):
        env_probe.session_probe(PONG, str(tmp_path))
    gin.clear_config()


def test_the_machine_record_of_a_session_holds_the_probe_and_says_it(tmp_path):
    probe = {'game': 'pong', 'env_steps_per_cpu_second': 6123.4}
    app.prepare_run_dir(str(tmp_path), {'paper': 'paac'}, {'paper': 'paac'}, env_probe=probe)
    (session,) = json.loads((tmp_path / app.RUN_FILE).read_text())['sessions']
    assert session['machine']['env_probe'] == probe
    assert machine_load.describe(session['machine']).endswith(
        ', pong env 6,100 steps per CPU second')
    app.prepare_run_dir(str(tmp_path), {'paper': 'paac'}, {'paper': 'paac'})
    sessions = json.loads((tmp_path / app.RUN_FILE).read_text())['sessions']
    assert 'env_probe' not in sessions[-1]['machine']
