"""Evaluation protocols: how a trained policy is scored, one named row per source, each value cited.

A run names its protocol in one option (`DQNConfig.eval_protocol`, `PAACConfig.eval_protocol`,
`GA3CConfig.eval_protocol`, and for the accelerated methods `QValueConfig.eval_protocol` or
`ActorCriticConfig.eval_protocol`): a name in PROTOCOLS, or `@EvalProtocol()`, a named row with
some values bound otherwise (`EvalProtocol.base`, `EvalProtocol.episodes`, ...). The in-run
evaluations and `python -m common.evaluate` play it (common/evaluate.py: `play`).

The episode cap is in emulator frames; an Atari run converts it to agent steps by its
`AtariConfig.frame_skip` (`max_episode_steps`). No-op starts are 1..noop_max raw emulator frames
(AtariConfig.noop_max). Evaluation always plays whole games (no episodic life), at the run's own
repeat_action_probability. A Q-value policy acts epsilon-greedily at `epsilon` ("greedy" is
epsilon 0 only); an actor-critic policy draws each action from pi (`sample=True`, the stochastic
policy it trained) or takes argmax pi (`sample=False`, greedy). None: the source states none, and
a policy of that kind is refused under the protocol.
"""
import dataclasses
from typing import Optional

import gin

from common.system import checks

__all__ = ('EvalProtocol', 'BoundProtocol', 'PROTOCOLS', 'KINDS', 'Choice', 'resolve', 'require',
           'greedy')

# The kinds of policy a protocol scores: epsilon-greedy on Q-values, or an actor-critic's pi.
KINDS = ('q_values', 'actor_critic')


@dataclasses.dataclass(frozen=True)
class EvalProtocol:
    """One evaluation: `episodes` whole games (each environment's first), or with `steps` > 0 a
    budget: `envs` environments side by side for `steps` agent steps in all, the episodes that end
    within it scored; each from 1..noop_max no-op frames, cut at max_frames emulator frames."""
    name: str
    episodes: int
    noop_max: int
    max_frames: int
    epsilon: Optional[float]      # Q-value policies: epsilon-greedy (0: greedy); None: states none
    sample: Optional[bool]        # actor-critic: True draws from pi, False argmax pi; None: none
    steps: int = 0
    envs: int = 0
    source: str = ''

    def max_episode_steps(self, frame_skip):
        """The cap in agent steps of frame_skip frames each (whole steps within max_frames)."""
        return self.max_frames // frame_skip

    def budget_text(self):
        """What one evaluation plays, as the evaluation line says it."""
        return f'{self.steps:,} steps' if self.steps else f'{self.episodes} episodes'

    def describe(self, frame_skip=None):
        """One line: the protocol's name and values, the cap in frames (and agent steps)."""
        cap = f'{self.max_frames:,}-frame cap'
        if frame_skip:
            cap += f' ({self.max_episode_steps(frame_skip):,} agent steps)'
        plays = (f'{self.envs} envs for {self.steps:,} steps' if self.steps
                 else f'{self.episodes} episodes')
        starts = f'1 to {self.noop_max} no-op starts' if self.noop_max else 'no no-op starts'
        acting = []
        if self.epsilon is not None:
            acting.append('greedy (epsilon 0)' if self.epsilon == 0 else
                          f'epsilon {self.epsilon:g}')
        if self.sample is not None:
            acting.append('actions drawn from pi' if self.sample else 'argmax pi (greedy)')
        return f"'{self.name}': {plays}, {starts}, {cap}, {' / '.join(acting)}"

    def validate(self, where):
        """ConfigError in one line naming the first value out of range."""
        require = checks.require
        for field in ('episodes', 'noop_max', 'max_frames', 'steps', 'envs'):
            value = getattr(self, field)
            require(isinstance(value, int) and not isinstance(value, bool) and value >= 0,
                    f'{where}: {field}={value!r} must be an int >= 0')
        require(self.max_frames > 0, f'{where}: max_frames=0; allowed: a cap of >= 1 frame')
        if self.steps:
            require(self.steps >= self.envs >= 1, f'{where}: steps={self.steps} over envs='
                    f'{self.envs}; allowed: steps >= envs >= 1')
        else:
            require(self.episodes > 0, f'{where}: episodes=0 with steps=0; allowed: episodes '
                    '>= 1, or a step budget steps >= envs >= 1')
        require(self.epsilon is None or (not isinstance(self.epsilon, bool)
                                         and isinstance(self.epsilon, (int, float))
                                         and 0 <= self.epsilon <= 1),
                f'{where}: epsilon={self.epsilon!r}; allowed: a number in [0, 1] or None')
        require(self.sample in (None, True, False),
                f'{where}: sample={self.sample!r}; allowed: True, False or None')


_RLPYT = 'astooke/rlpyt'
PROTOCOLS = {protocol.name: protocol for protocol in (
    EvalProtocol(
        'nature', episodes=30, noop_max=30, max_frames=18_000, epsilon=0.05, sample=None,
        source='Mnih et al. (2015), Methods, evaluation procedure: each game played 30 times for '
               'up to 5 min (18,000 frames at 60 Hz) with up to 30 no-op starts and an '
               'epsilon-greedy policy with epsilon = 0.05'),
    EvalProtocol(
        'machado', episodes=30, noop_max=30, max_frames=108_000, epsilon=0.05, sample=None,
        source="Nature's protocol with the cap of Machado et al. (2018, JAIR, 'Revisiting the "
               "ALE'): 108,000 frames (30 min) per episode"),
    EvalProtocol(
        'fast_dqn', episodes=30, noop_max=30, max_frames=108_000, epsilon=0.05, sample=None,
        source='Daley & Amato (2021), section 5.2: "executing an epsilon-greedy policy (epsilon '
               '= 0.05) for 30 episodes in a separate environment instance"; the cap the paper '
               'leaves out is its code\'s (brett-daley/fast-dqn fast_dqn/atari_env.py: '
               'TimeLimitWrapper(27_000), "27k timesteps * 4 frames/timestep = 108k frames"; '
               'NoopResetWrapper(noop_max=30))'),
    EvalProtocol(
        'stooke', episodes=0, steps=125_000, envs=4, noop_max=30, max_frames=108_000,
        epsilon=0.001, sample=None,
        source='Stooke & Abbeel (2018), section 4.2: "For DQN and variants, we paused every '
               '1-million steps to evaluate for up to 125,000 steps, with maximum path length of '
               f'27,000 steps" (x 4 frames); what the paper leaves out is {_RLPYT}\'s: 4 '
               'environments (atari_dqn.py eval_n_envs=4), epsilon 0.001 (epsilon_greedy.py '
               'eps_eval=0.001), 30 no-op starts (atari_env.py max_start_noops=30)'),
    EvalProtocol(
        'stooke_pg', episodes=100, noop_max=30, max_frames=108_000, epsilon=None, sample=True,
        source='Stooke & Abbeel (2018), section 4.2: "For policy gradient methods, we tracked '
               'online scores, averaging over the most recent 100 completed trajectories": the '
               f'trained policy\'s own draws, whole games, as {_RLPYT}\'s atari_env.py plays '
               'them (horizon=27000 steps x 4 frames, max_start_noops=30)'),
    EvalProtocol(
        'paac', episodes=30, noop_max=30, max_frames=108_000, epsilon=None, sample=True,
        source='Clemente et al. (2017), Table 1: scores "averaged over 30 runs with upto 30 '
               'no-op actions start condition" (section 5.1: "between 1 and 30"); the paper '
               'states no cap and its test.py (alfredvc/paac) plays each game to its end, '
               'drawing each action from pi (PAACLearner.choose_next_actions): here the cap of '
               'the preset\'s training, 108,000 frames (gin/paac/paper.gin)'),
    EvalProtocol(
        'ga3c', episodes=30, noop_max=0, max_frames=400_000, epsilon=None, sample=False,
        source='Babaeizadeh et al. (2017), Table 3: "we measured the average score on 30 games, '
               'each initialized with a random seed"; no no-op starts and argmax pi as the code '
               'plays (NVlabs/GA3C ProcessAgent.py: PLAY_MODE selects np.argmax(prediction)); '
               'the paper states no cap: <Game>Deterministic-v0\'s 100,000 steps x 4 frames'),
)}


def _names():
    return ', '.join(PROTOCOLS)


def resolve(value, where):
    """The EvalProtocol that value (a name in PROTOCOLS, an EvalProtocol, or @EvalProtocol()'s
    BoundProtocol) names, validated; ConfigError in one line naming value and what is allowed."""
    if isinstance(value, str):
        checks.require(value in PROTOCOLS, f'{where}={value!r} is not an evaluation protocol; '
                       f'allowed: {_names()}, or @EvalProtocol()')
        return PROTOCOLS[value]
    if isinstance(value, BoundProtocol):
        return value.apply()
    checks.require(isinstance(value, EvalProtocol), f'{where}={value!r} must be a protocol name '
                   f'({_names()}) or @EvalProtocol()')
    value.validate(where)
    return value


def require(value, where, kind, env_config=None):
    """resolve(value), checked for a policy of kind (KINDS) and, for an Atari env_config, a cap
    of at least one agent step; returns the EvalProtocol."""
    protocol = resolve(value, where)
    if kind not in KINDS:
        raise ValueError(f'kind={kind!r}; allowed: {KINDS}')
    field, what = (('epsilon', 'epsilon for a Q-value policy') if kind == 'q_values' else
                   ('sample', 'actor-critic policy (sample or argmax pi)'))
    stating = ', '.join(name for name, row in PROTOCOLS.items()
                        if getattr(row, field) is not None)
    checks.require(getattr(protocol, field) is not None, f"{where}: protocol '{protocol.name}' "
                   f'states no {what}; allowed: a protocol that does ({stating}), or one '
                   'binding it (@EvalProtocol(), --greedy)')
    frame_skip = getattr(env_config, 'frame_skip', None)
    if frame_skip:
        checks.require(protocol.max_frames >= frame_skip,
                       f"{where}: protocol '{protocol.name}' caps episodes at {protocol.max_frames}"
                       f' frames, under one agent step of frame_skip={frame_skip} frames')
    return protocol


def greedy(protocol):
    """protocol with greedy acting: epsilon 0 for Q-value policies, argmax pi for actor-critics."""
    return dataclasses.replace(protocol, name=f'{protocol.name}+greedy', epsilon=0.0, sample=False)


@dataclasses.dataclass(frozen=True)
class Choice:
    """What a command asks instead of a run's protocol (common.evaluate's and common.suite's
    flags): another named protocol, and values over it; None keeps the protocol's. episodes
    replaces a step budget with that many episodes; sample: an actor-critic's actions drawn
    from pi (True) or argmax pi (False)."""
    name: Optional[str] = None
    episodes: Optional[int] = None
    max_frames: Optional[int] = None
    epsilon: Optional[float] = None
    sample: Optional[bool] = None

    def check(self):
        """ConfigError in one line, by the flag, before anything is loaded."""
        if self.name is not None:
            checks.require(self.name in PROTOCOLS, f'--protocol={self.name!r}; allowed: '
                           f'{_names()}')
        for flag, value in (('num_episodes', self.episodes), ('max_frames', self.max_frames)):
            checks.require(value is None or value > 0, f'--{flag} must be > 0, got {value}')
        checks.require(self.epsilon is None or 0 <= self.epsilon <= 1,
                       f'--epsilon={self.epsilon}; allowed: a number in [0, 1]')
        checks.require(self.sample in (None, True, False),
                       f'sample={self.sample!r}; allowed: True, False or None')
        return self

    def apply(self, protocol):
        """The run's protocol with this choice over it (unchanged when nothing is chosen)."""
        base = PROTOCOLS[self.name] if self.name is not None else protocol
        changes = {name: value for name, value in (
            ('episodes', self.episodes), ('max_frames', self.max_frames),
            ('epsilon', self.epsilon), ('sample', self.sample)) if value is not None}
        if self.episodes is not None:
            changes.update(steps=0, envs=0)
        if not changes:
            return base
        label = ','.join(f'{name}={value}' for name, value in changes.items()
                         if name not in ('steps', 'envs'))
        return dataclasses.replace(base, name=f'{base.name}+{label}', **changes)


@dataclasses.dataclass(frozen=True)
class BoundProtocol:
    """What `@EvalProtocol()` builds: a named protocol (base) and the values bound over it;
    resolve() checks and applies them (checked there, not in the gin call, so that a bad one is
    named in one line)."""
    base: Optional[str]
    changes: tuple  # ((field, value), ...)

    def apply(self):
        checks.require(self.base in PROTOCOLS,
                       f'EvalProtocol.base={self.base!r}; allowed: {_names()}')
        changes = dict(self.changes)
        if 'episodes' in changes and 'steps' not in changes:
            changes.update(steps=0, envs=0)  # episodes instead of base's step budget
        label = ','.join(f'{name}={value}' for name, value in self.changes)
        protocol = PROTOCOLS[self.base]
        if not label:
            return protocol
        bound = dataclasses.replace(protocol, name=f'{self.base}+{label}',
                                    source=f"{self.base}'s, with {label} bound", **changes)
        bound.validate('EvalProtocol')
        return bound


@gin.configurable('EvalProtocol')
def bound_protocol(base=None, episodes=None, noop_max=None, max_frames=None, epsilon=None,
                   sample=None, steps=None, envs=None):
    """`@EvalProtocol()`: the named protocol base with the values bound (None keeps base's),
    e.g. a test's 2 episodes; its name says what differs. Binding episodes alone turns a step
    budget into that many episodes."""
    return BoundProtocol(base, tuple((name, value) for name, value in (
        ('episodes', episodes), ('noop_max', noop_max), ('max_frames', max_frames),
        ('epsilon', epsilon), ('sample', sample), ('steps', steps), ('envs', envs))
        if value is not None))
