"""`common.evaluate` plays a run's evaluation protocol (common/envs/eval_protocols.py): the
protocol's no-op starts and cap (frames as agent steps) on the env, its episodes or step budget,
its epsilon or sampling; flags choose another protocol or values over it, and bad ones stop in a
line before anything loads. Runs here: the CartPole run directories of tests/fixtures/checkpoints
(recorded before the protocols existed: their eval_epsilon and eval_episodes bindings are read
without), copied, since an evaluation appends to the run's eval.csv."""
import dataclasses
import os
import shutil

import numpy as np
import pytest

from common import evaluate
from common.envs import atari
from common.envs import eval_protocols
from common.envs import gym as gym_envs
from common.launch import app
from common.system import errors
from common.tools import run_files

PROTOCOLS = eval_protocols.PROTOCOLS
FIXTURES = os.path.join(app.PROJECT_ROOT, 'tests', 'fixtures', 'checkpoints')


def test_the_evaluation_env_takes_the_protocols_starts_and_its_cap_in_agent_steps():
    training = atari.AtariConfig(game='pong', frame_skip=4, noop_max=30, episodic_life=True,
                                 max_episode_steps=27_000)
    nature = evaluate.evaluation_env_config(training, PROTOCOLS['nature'])
    assert nature == dataclasses.replace(training, episodic_life=False, decorrelation_steps=0,
                                         max_episode_steps=4_500)  # 18,000 frames / 4
    ga3c = evaluate.evaluation_env_config(dataclasses.replace(training, frame_skip=3),
                                          PROTOCOLS['ga3c'])
    assert (ga3c.noop_max, ga3c.max_episode_steps) == (0, 133_333)  # 400,000 frames / 3
    cartpole = gym_envs.GymConfig('CartPole-v1')
    assert evaluate.evaluation_env_config(cartpole, PROTOCOLS['nature']) is cartpole
    # Whole games: what a lost life did in training goes with its terminal, and the result is
    # a config that validates (the life-loss options need episodic_life).
    fast_dqn = dataclasses.replace(training, fire_reset=True, life_loss_restarts_stack=True,
                                   fire_on_life_loss=True)
    played = evaluate.evaluation_env_config(fast_dqn, PROTOCOLS['fast_dqn'])
    played.validate()
    assert (played.episodic_life, played.life_loss_restarts_stack, played.fire_on_life_loss,
            played.fire_reset) == (False, False, False, True)


def test_the_counted_game_is_played_by_the_policy_from_its_first_step():
    # Stooke & Abbeel's presets decorrelate training envs with up to 1,000 random actions at
    # their first reset; in an evaluation those would play the start of each environment's first
    # game, the one that counts. Capped at 40 frames (10 agent steps), the game must take 10
    # actions of the policy, whatever the training config's decorrelation.
    training = atari.AtariConfig(game='pong', variant='stooke', decorrelation_steps=1000,
                                 episodic_life=True)
    capped = dataclasses.replace(PROTOCOLS['stooke_pg'], episodes=2, max_frames=40)
    assert evaluate.evaluation_env_config(training, capped).resolved_decorrelation_steps == 0
    calls = []

    def noop(observations):
        calls.append(len(observations))
        return np.zeros(len(observations), np.int64)

    scores = evaluate.play(training, noop, capped, seed=3)
    assert len(scores) == 2 and calls == [2] * 10


def test_play_runs_the_protocols_episodes_or_its_step_budget():
    # Always pushing left, CartPole's pole falls after about 9 steps: cut at 7, every episode
    # lasts 7 steps.
    cut = gym_envs.GymConfig('CartPole-v1', max_episode_steps=7)
    left = lambda observations: [0] * len(observations)  # noqa: E731
    episodes = dataclasses.replace(PROTOCOLS['nature'], episodes=3)
    assert evaluate.play(cut, left, episodes).tolist() == [7.0, 7.0, 7.0]
    # 2 environments x 15 steps each: episodes end at steps 7 and 14 of each.
    budget = dataclasses.replace(PROTOCOLS['stooke'], steps=30, envs=2)
    assert evaluate.play(cut, left, budget).tolist() == [7.0, 7.0, 7.0, 7.0]


def test_a_long_evaluation_says_how_far_it_has_got(monkeypatch, capsys):
    # A progress line at most every PROGRESS_SECONDS: at 0, one per step of the pool, counting
    # the episodes ended and the steps played by every environment.
    cut = gym_envs.GymConfig('CartPole-v1', max_episode_steps=7)
    left = lambda observations: [0] * len(observations)  # noqa: E731
    monkeypatch.setattr(evaluate, 'PROGRESS_SECONDS', 0.0)
    evaluate.play(cut, left, dataclasses.replace(PROTOCOLS['nature'], episodes=3))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7 and lines[-1].startswith(
        '  evaluating: 3 of 3 episodes ended, 21 steps played (')
    assert lines[0].startswith('  evaluating: 0 of 3 episodes ended, 3 steps played (')
    evaluate.play(cut, left, dataclasses.replace(PROTOCOLS['stooke'], steps=30, envs=2))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 15 and lines[-1].startswith(
        '  evaluating: 4 episodes ended of a 30-step budget, 30 steps played (')
    monkeypatch.setattr(evaluate, 'PROGRESS_SECONDS', 3600.0)  # the default's kind: quiet
    evaluate.play(cut, left, dataclasses.replace(PROTOCOLS['nature'], episodes=3))
    assert capsys.readouterr().out == ''


def _copy(name, tmp_path):
    run_dir = tmp_path / name
    shutil.copytree(os.path.join(FIXTURES, name), run_dir)
    return str(run_dir)


def test_a_run_is_evaluated_by_its_papers_protocol_unless_asked_otherwise(tmp_path):
    run_dir = _copy('dqn', tmp_path)
    _, policy, _ = evaluate.load_policy(run_dir)
    assert policy.protocol is PROTOCOLS['fast_dqn']  # a run from before the option: fast DQN's
    row, out = evaluate.evaluate_run(run_dir, seed=7)
    assert out == os.path.join(run_dir, evaluate.EVAL_FILE)
    assert int(row['episodes']) == 30 and row['protocol'].startswith("'fast_dqn': 30 episodes")
    assert int(run_files.read_csv(out)[-1]['episodes']) == 30
    # Flags: another protocol, values over it, greedy (epsilon 0, said as such).
    row, _ = evaluate.evaluate_run(run_dir, num_episodes=3, protocol='nature', seed=7)
    assert int(row['episodes']) == 3 and row['protocol'].startswith(
        "'nature+episodes=3': 3 episodes, 1 to 30 no-op starts, 18,000-frame cap")
    _, policy, _ = evaluate.load_policy(run_dir, greedy=True)
    assert (policy.protocol.epsilon, policy.protocol.name) == (0.0, 'fast_dqn+greedy')
    choice = eval_protocols.Choice(epsilon=0.01)
    _, policy, _ = evaluate.load_policy(run_dir, choice=choice)
    assert policy.protocol.epsilon == 0.01


def test_the_protocol_decides_how_a_policy_acts(tmp_path):
    # An accelerated DQN run: 'stooke', epsilon 0.001 (its final training epsilon was 0.1).
    _, policy, _ = evaluate.load_policy(_copy('accel_dqn', tmp_path))
    assert policy.protocol is PROTOCOLS['stooke'] and policy.head == 'q_values'
    # PAAC samples from pi under 'paac' (two calls on one batch differ somewhere), argmax pi
    # when greedy (always the same).
    run_dir = _copy('paac', tmp_path)
    env_config, sampled, _ = evaluate.load_policy(run_dir)
    assert sampled.protocol is PROTOCOLS['paac']
    observations = np.random.default_rng(0).normal(size=(256, 4)).astype(np.float32)
    draws = [np.asarray(sampled(observations)) for _ in range(2)]
    assert (draws[0] != draws[1]).any()
    _, greedy, _ = evaluate.load_policy(run_dir, greedy=True)
    assert (np.asarray(greedy(observations)) == np.asarray(greedy(observations))).all()
    assert greedy.protocol.sample is False
    # A protocol stating no actor-critic acting is refused for it, in one line.
    with pytest.raises(errors.ConfigError) as raised:
        evaluate.load_policy(run_dir, choice=eval_protocols.Choice('nature'))
    assert "protocol 'nature' states no actor-critic policy" in str(raised.value)
    assert '\n' not in str(raised.value)


@pytest.mark.parametrize('kwargs, named', [
    ({'protocol': 'natur'}, "--protocol='natur'; allowed: nature, machado"),
    ({'num_episodes': 0}, '--num_episodes must be > 0, got 0'),
    ({'max_frames': -4}, '--max_frames must be > 0, got -4'),
    ({'epsilon': 1.5}, '--epsilon=1.5; allowed: a number in [0, 1]'),
])
def test_bad_flags_stop_in_one_line_before_the_run_is_read(tmp_path, kwargs, named):
    with pytest.raises(errors.ConfigError) as raised:
        evaluate.evaluate_run(str(tmp_path / 'nowhere'), **kwargs)
    assert named in str(raised.value) and '\n' not in str(raised.value)


@pytest.mark.parametrize('name, owner', [('paac', 'PAACConfig'), ('ga3c', 'GA3CConfig'),
                                         ('dqn', 'DQNConfig'), ('accel_ppo', 'AccelConfig'),
                                         ('accel_dqn', 'AccelConfig')])
def test_a_run_that_asked_for_the_machines_dtype_is_evaluated_in_it(tmp_path, name, owner):
    """compute_dtype 'auto' is resolved when a run starts, and again when its recorded config is
    read back for evaluation (the suite's final evaluation of gin/fast/pong.gin failed on it)."""
    run_dir = _copy(name, tmp_path)
    with open(os.path.join(run_dir, 'operative_config.gin'), 'a') as f:
        f.write(f"\n{owner}.compute_dtype = 'auto'\n")
    env_config, policy, env_steps = evaluate.load_policy(run_dir)
    assert env_steps > 0
    observations = np.zeros((1,) + tuple(env_config.observation_shape),
                            env_config.observation_dtype)
    assert np.asarray(policy(observations)).shape == (1,)
