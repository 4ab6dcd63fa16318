"""The evaluation protocols' table against the numbers the papers (and, where a paper states none,
the original code) print, the cap's frames as agent steps worked by hand, each paper's presets
selecting its own protocol by name, and bad names and values refused in one line."""
import os

import gin
import pytest

from common.envs import atari
from common.envs import eval_protocols
from common.launch import app
from common.launch import registry
from common.system import errors

PROTOCOLS = eval_protocols.PROTOCOLS


@pytest.mark.parametrize('name, episodes, steps, envs, noop_max, max_frames, epsilon, sample', [
    # Mnih et al. (2015), Methods: 30 games of up to 5 min = 300 s x 60 Hz = 18,000 frames, up
    # to 30 no-ops, epsilon 0.05.
    ('nature', 30, 0, 0, 30, 18_000, 0.05, None),
    # Machado et al. (2018): 30 min = 1,800 s x 60 Hz = 108,000 frames.
    ('machado', 30, 0, 0, 30, 108_000, 0.05, None),
    # Daley & Amato (2021) 5.2: 30 episodes at 0.05; code: 27,000 timesteps x 4 frames.
    ('fast_dqn', 30, 0, 0, 30, 108_000, 0.05, None),
    # Stooke & Abbeel (2018) 4.2: 125,000 steps, paths of 27,000 steps x 4; rlpyt: 4 envs, 0.001.
    ('stooke', 0, 125_000, 4, 30, 108_000, 0.001, None),
    # 4.2: the most recent 100 trajectories of the training policy (sampled).
    ('stooke_pg', 100, 0, 0, 30, 108_000, None, True),
    # Clemente et al. (2017) Table 1: 30 runs, up to 30 no-ops; test.py samples from pi.
    ('paac', 30, 0, 0, 30, 108_000, None, True),
    # Babaeizadeh et al. (2017) Table 3: 30 games; the code from reset, argmax; 100,000 x 4.
    ('ga3c', 30, 0, 0, 0, 400_000, None, False),
])
def test_each_protocol_holds_its_sources_numbers(name, episodes, steps, envs, noop_max,
                                                  max_frames, epsilon, sample):
    protocol = PROTOCOLS[name]
    assert (protocol.episodes, protocol.steps, protocol.envs, protocol.noop_max,
            protocol.max_frames, protocol.epsilon, protocol.sample) == (
        episodes, steps, envs, noop_max, max_frames, epsilon, sample)
    assert protocol.source  # cited
    protocol.validate(name)


def test_the_cap_in_frames_is_agent_steps_of_the_envs_frame_skip():
    # 18,000 / 4 = 4,500; 108,000 / 4 = 27,000; 400,000 / 4 = 100,000; 108,000 / 3 = 36,000
    # (Space Invaders' frame skip in Mnih et al. 2015); 18,000 / 7 = 2,571.4: whole steps.
    assert PROTOCOLS['nature'].max_episode_steps(4) == 4_500
    assert PROTOCOLS['stooke'].max_episode_steps(4) == 27_000  # the paper's path length
    assert PROTOCOLS['fast_dqn'].max_episode_steps(4) == 27_000  # TimeLimitWrapper(27_000)
    assert PROTOCOLS['ga3c'].max_episode_steps(4) == 100_000  # Deterministic-v0's limit
    assert PROTOCOLS['machado'].max_episode_steps(3) == 36_000
    assert PROTOCOLS['nature'].max_episode_steps(7) == 2_571
    assert PROTOCOLS['nature'].describe(4) == (
        "'nature': 30 episodes, 1 to 30 no-op starts, 18,000-frame cap (4,500 agent steps), "
        'epsilon 0.05')


def test_greedy_is_epsilon_0_or_argmax_and_says_so():
    greedy = eval_protocols.greedy(PROTOCOLS['stooke'])
    assert (greedy.epsilon, greedy.sample, greedy.steps) == (0.0, False, 125_000)
    assert 'greedy (epsilon 0)' in greedy.describe() and 'epsilon 0.001' not in greedy.describe()
    assert 'epsilon 0.001' in PROTOCOLS['stooke'].describe()  # not called greedy
    assert 'argmax pi (greedy)' in eval_protocols.greedy(PROTOCOLS['paac']).describe()


@pytest.mark.parametrize('paper, preset, owner, name', [
    ('dqn', 'gin/dqn/pong.gin', 'DQNConfig', 'fast_dqn'),
    ('paac', 'gin/paac/pong.gin', 'PAACConfig', 'paac'),
    ('paac', 'gin/paac/original_code.gin', 'PAACConfig', 'paac'),
    ('ga3c', 'gin/ga3c/pong.gin', 'GA3CConfig', 'ga3c'),
    ('ga3c', 'gin/ga3c/paper.gin', 'GA3CConfig', 'ga3c'),
    ('accel', 'gin/accel/dqn_pong.gin', 'QValueConfig', 'stooke'),
    ('accel', 'gin/accel/dqn_original_code_pong.gin', 'QValueConfig', 'stooke'),
    ('accel', 'gin/accel/rainbow_pong.gin', 'QValueConfig', 'stooke'),
    ('accel', 'gin/accel/a2c_pong.gin', 'ActorCriticConfig', 'stooke_pg'),
    ('accel', 'gin/accel/ppo_pong.gin', 'ActorCriticConfig', 'stooke_pg'),
    ('accel', 'gin/accel/ppo_original_code_pong.gin', 'ActorCriticConfig', 'stooke_pg'),
    ('accel', 'gin/accel/appo_pong.gin', 'ActorCriticConfig', 'stooke_pg'),
])
def test_each_papers_presets_select_its_protocol_by_name(paper, preset, owner, name):
    path = os.path.join(app.PROJECT_ROOT, preset)
    config = registry.entry_point(paper).configure([path], [])
    try:
        assert config.evaluation_protocol() is PROTOCOLS[name]
        included = [path] + [os.path.join(app.PROJECT_ROOT, other) for other in
                             _included(path)]
        assert any(f"{owner}.eval_protocol = '{name}'" in open(file).read()
                   for file in included)  # bound by name, where its citation stands
    finally:
        gin.clear_config()


def _included(path):
    text = open(path).read()
    names = [line.split("'")[1] for line in text.splitlines() if line.startswith('include ')]
    return names + [deeper for name in names
                    for deeper in _included(os.path.join(app.PROJECT_ROOT, name))]


def test_a_bound_protocol_is_a_named_one_with_values_changed():
    gin.parse_config(["EvalProtocol.base = 'fast_dqn'", 'EvalProtocol.episodes = 2'])
    bound = eval_protocols.resolve(eval_protocols.bound_protocol(), 'X')
    assert (bound.name, bound.episodes, bound.epsilon, bound.max_frames) == (
        'fast_dqn+episodes=2', 2, 0.05, 108_000)
    gin.clear_config()
    # Episodes instead of a step budget unless steps are bound too.
    gin.parse_config(["EvalProtocol.base = 'stooke'", 'EvalProtocol.episodes = 3'])
    bound = eval_protocols.resolve(eval_protocols.bound_protocol(), 'X')
    assert (bound.steps, bound.episodes, bound.epsilon) == (0, 3, 0.001)
    gin.clear_config()
    gin.parse_config(["EvalProtocol.base = 'ga3c'"])  # nothing bound over it: ga3c itself
    assert eval_protocols.resolve(eval_protocols.bound_protocol(), 'X') is PROTOCOLS['ga3c']


def test_a_choice_over_a_runs_protocol():
    choice = eval_protocols.Choice(episodes=5).check()
    chosen = choice.apply(PROTOCOLS['stooke'])
    assert (chosen.episodes, chosen.steps, chosen.envs, chosen.epsilon) == (5, 0, 0, 0.001)
    assert eval_protocols.Choice('nature').check().apply(PROTOCOLS['paac']) is PROTOCOLS['nature']
    assert eval_protocols.Choice().apply(PROTOCOLS['paac']) is PROTOCOLS['paac']
    machado = eval_protocols.Choice('nature', max_frames=108_000).apply(PROTOCOLS['paac'])
    assert (machado.max_frames, machado.name) == (108_000, 'nature+max_frames=108000')
    sampled = eval_protocols.Choice(sample=True).check().apply(PROTOCOLS['ga3c'])
    assert (sampled.sample, sampled.name) == (True, 'ga3c+sample=True')


def _one_line(call):
    with pytest.raises(errors.ConfigError) as raised:
        call()
    message = str(raised.value)
    assert '\n' not in message
    return message


@pytest.mark.parametrize('value, named', [
    ('natur', "X.eval_protocol='natur' is not an evaluation protocol; allowed: nature, machado, "
              'fast_dqn, stooke, stooke_pg, paac, ga3c, or @EvalProtocol()'),
    (3, 'X.eval_protocol=3 must be a protocol name'),
    (eval_protocols.EvalProtocol('x', 0, 30, 18_000, 0.05, None),
     'X.eval_protocol: episodes=0 with steps=0; allowed'),
    (eval_protocols.EvalProtocol('x', 30, -1, 18_000, 0.05, None),
     'X.eval_protocol: noop_max=-1 must be an int >= 0'),
    (eval_protocols.EvalProtocol('x', 30, 30, 18_000, 1.5, None),
     'X.eval_protocol: epsilon=1.5; allowed: a number in [0, 1] or None'),
    (eval_protocols.EvalProtocol('x', 0, 30, 18_000, 0.05, None, steps=3, envs=4),
     'X.eval_protocol: steps=3 over envs=4; allowed: steps >= envs >= 1'),
    (eval_protocols.EvalProtocol('x', 30, 30, 0, 0.05, None),
     'X.eval_protocol: max_frames=0; allowed: a cap of >= 1 frame'),
])
def test_a_bad_protocol_is_refused_in_one_line(value, named):
    assert named in _one_line(lambda: eval_protocols.resolve(value, 'X.eval_protocol'))


def test_a_protocol_without_acting_for_the_policy_kind_or_a_cap_under_a_step_is_refused():
    message = _one_line(lambda: eval_protocols.require('nature', 'PAACConfig.eval_protocol',
                                                       'actor_critic'))
    assert message.startswith("PAACConfig.eval_protocol: protocol 'nature' states no "
                              'actor-critic policy') and 'stooke_pg, paac, ga3c' in message
    message = _one_line(lambda: eval_protocols.require('ga3c', 'DQNConfig.eval_protocol',
                                                       'q_values'))
    assert "protocol 'ga3c' states no epsilon for a Q-value policy" in message
    short = eval_protocols.EvalProtocol('short', 1, 0, 3, 0.0, None)
    message = _one_line(lambda: eval_protocols.require(short, 'DQNConfig.eval_protocol',
                                                       'q_values', atari.AtariConfig()))
    assert 'caps episodes at 3 frames, under one agent step of frame_skip=4' in message
    for call in (lambda: eval_protocols.Choice('natur').check(),
                 lambda: eval_protocols.Choice(episodes=0).check(),
                 lambda: eval_protocols.Choice(epsilon=2.0).check()):
        assert _one_line(call).startswith('--')
    gin.parse_config(["EvalProtocol.base = 'natur'", 'EvalProtocol.episodes = 2'])
    assert "EvalProtocol.base='natur'; allowed: nature" in _one_line(
        lambda: eval_protocols.resolve(eval_protocols.bound_protocol(), 'X'))
    gin.clear_config()
    gin.parse_config(["EvalProtocol.base = 'nature'", 'EvalProtocol.episodes = -2'])
    assert 'EvalProtocol: episodes=-2 must be an int >= 0' in _one_line(
        lambda: eval_protocols.resolve(eval_protocols.bound_protocol(), 'X'))


@pytest.mark.parametrize('paper, preset, binding, named', [
    ('dqn', 'gin/dqn/pong.gin', "DQNConfig.eval_protocol = 'greedy'",
     "DQNConfig.eval_protocol='greedy' is not an evaluation protocol"),
    ('dqn', 'gin/dqn/pong.gin', 'DQNConfig.eval_epsilon = 0.0',
     'DQNConfig.eval_epsilon (--gin_bindings=\'DQNConfig.eval_epsilon = 0.0\') is not a binding: '
     'bind DQNConfig.eval_protocol instead'),
    ('paac', 'gin/paac/pong.gin', "PAACConfig.eval_protocol = 'stooke'",
     "PAACConfig.eval_protocol: protocol 'stooke' states no actor-critic policy"),
    ('ga3c', 'gin/ga3c/pong.gin', 'GA3CConfig.eval_protocol = 1',
     'GA3CConfig.eval_protocol=1 must be a protocol name'),
    ('dqn', 'gin/dqn/pong.gin', 'DQNConfig.eval_protocol = @EvalProtocol()',
     "EvalProtocol.base=None; allowed: nature, machado"),
])
def test_a_bad_binding_of_a_papers_protocol_is_refused_in_one_line(paper, preset, binding,
                                                                    named):
    configure = registry.entry_point(paper).configure
    message = _one_line(lambda: configure([os.path.join(app.PROJECT_ROOT, preset)], [binding]))
    assert named in message
