"""Evaluation: a policy plays its run's protocol (common/envs/eval_protocols.py); rows to a CSV.

`python -m common.evaluate --run_dir=runs/paac-pong-...` restores the run's latest checkpoint
(or a published result's policy weights, docs/results/NAME) through its paper package
(`<paper>_tf.main.load_policy`) and plays the run's evaluation protocol (its config's
`eval_protocol`, its paper's, unless flags choose another or override its values) side by side in
one batched pool, so evaluation costs one inference per step for all episodes. The row goes to
RUN/eval.csv, or for a published result (a record, not written to) to ./NAME-eval.csv; --out
chooses another CSV. The in-run evaluations of fast DQN and the Q-value family play the same
protocol objects through `play`.
"""
import csv
import dataclasses
import os
import time
from typing import Any, Callable

from absl import flags
import numpy as np

from common.envs import atari
from common.envs import eval_protocols
from common.envs import pools
from common.launch import app
from common.launch import config as launch_config
from common.launch import registry
from common.system import checks
from common.system import errors

EVAL_FILE = 'eval.csv'
EVAL_COLUMNS = ('wall_time', 'env_steps', 'episodes', 'score_mean', 'score_min', 'score_max',
                'score_std', 'seconds')


def evaluation_env_config(env_config, protocol):
    """The training env config with protocol's no-op starts and cap (its frames in agent steps
    of the env's frame_skip). Evaluation always plays whole games from their first frame
    (AtariConfig.whole_games: no episodic life, no start-up decorrelation, whatever training
    used). A gym env keeps its own starts and limit."""
    if isinstance(env_config, atari.AtariConfig):
        return env_config.whole_games(
            noop_max=protocol.noop_max,
            max_episode_steps=protocol.max_episode_steps(env_config.frame_skip))
    return env_config


def play(env_config, policy_fn, protocol, seed=12345):
    """Plays protocol (an eval_protocols.EvalProtocol) with policy_fn on the training env config
    made an evaluation's; the scores of its episodes (its episodes, or those ended within its
    step budget)."""
    env_config = evaluation_env_config(env_config, protocol)
    if protocol.steps:
        return run_for_steps(env_config, policy_fn, protocol.envs, protocol.steps, seed)
    return run_episodes(env_config, policy_fn, protocol.episodes, seed)


PROGRESS_SECONDS = 60.0  # a progress line at most this often (read at each call)


def _progress_printer():
    """report(text, steps): prints how far an evaluation has got, at most every PROGRESS_SECONDS
    (a 100-game evaluation whose games all run to the 108,000-frame cap plays 2.7M steps, tens of
    minutes on 2 cores, and would otherwise print nothing)."""
    every = PROGRESS_SECONDS
    start = last = time.monotonic()

    def report(text, steps):
        nonlocal last
        now = time.monotonic()
        if now - last >= every:
            last = now
            print(f'  evaluating: {text}, {steps:,} steps played '
                  f'({steps / max(now - start, 1e-9):,.0f} steps/s)', flush=True)

    return report


def run_episodes(env_config, policy_fn, num_episodes, seed=12345):
    """Plays num_episodes episodes, one per environment in a serial pool; returns their scores.

    policy_fn maps a (num_episodes, ...) observation batch to actions. Each environment's first
    finished episode counts; environments that finished keep stepping until all have.
    """
    if num_episodes <= 0:
        raise ValueError(f'num_episodes must be > 0, got {num_episodes}')
    scores = np.full(num_episodes, np.nan)
    finished = np.zeros(num_episodes, bool)
    report = _progress_printer()
    with pools.SerialPool(env_config, num_episodes, seed=seed) as pool:
        observations = pool.reset()
        steps = 0
        while not finished.all():
            result = pool.step(np.asarray(policy_fn(observations)))
            newly_finished = result.dones & ~finished
            scores[newly_finished] = result.episode_returns[newly_finished]
            finished |= result.dones
            observations = result.observations
            steps += num_episodes
            report(f'{int(finished.sum())} of {num_episodes} episodes ended', steps)
    return scores


def run_for_steps(env_config, policy_fn, num_envs, max_steps, seed=12345):
    """Plays num_envs environments side by side for max_steps steps in all (Stooke & Abbeel
    2018, section 4.2: "evaluate for up to 125,000 steps"); returns the scores of the episodes
    that ended within them, in the order they ended (none if no episode ended)."""
    if num_envs <= 0 or max_steps < num_envs:
        raise ValueError(f'need num_envs > 0 and max_steps >= num_envs, got {num_envs} and '
                         f'{max_steps}')
    scores = []
    report = _progress_printer()
    with pools.SerialPool(env_config, num_envs, seed=seed) as pool:
        observations = pool.reset()
        for step in range(1, max_steps // num_envs + 1):
            result = pool.step(np.asarray(policy_fn(observations)))
            scores.extend(result.episode_returns[result.dones].tolist())
            observations = result.observations
            report(f'{len(scores)} episodes ended of a {max_steps:,}-step budget', step * num_envs)
    return np.array(scores)


def write_eval_row(path, env_steps, scores, seconds, wall_time):
    """Appends one evaluation round to the CSV at path (header only when the file is new).

    wall_time: the run's training seconds when the evaluated policy was saved, the clock of
    metrics.csv's wall_time; seconds: how long the evaluation itself took."""
    is_new = not os.path.exists(path)
    row = {'wall_time': wall_time, 'env_steps': env_steps, 'episodes': len(scores),
           'score_mean': float(np.mean(scores)), 'score_min': float(np.min(scores)),
           'score_max': float(np.max(scores)), 'score_std': float(np.std(scores)),
           'seconds': seconds}
    with open(path, 'a', newline='') as f:
        writer = csv.DictWriter(f, EVAL_COLUMNS)
        if is_new:
            writer.writeheader()
        writer.writerow(row)
    return row


def evaluation_round(run_dir, env_steps, trained_seconds, play, budget_text):
    """One periodic evaluation of a training run: play() -> the scores of the episodes that
    ended; writes them to eval.csv and prints one line. Returns the row, None if no episode
    ended (budget_text says within what)."""
    start = time.perf_counter()
    scores = play()
    if not len(scores):
        print(f'eval at step {env_steps:,}: no episode ended within {budget_text}', flush=True)
        return None
    row = write_eval_row(os.path.join(run_dir, EVAL_FILE), env_steps, scores,
                         time.perf_counter() - start, trained_seconds)
    print(f"eval at step {env_steps:,}: mean {row['score_mean']:.2f} over {row['episodes']} "
          f'episodes', flush=True)
    return row


HEADS = ('logits', 'q_values')


@dataclasses.dataclass(frozen=True)
class Policy:
    """A restored policy_fn: called on an observation batch, the actions (numpy). It carries the
    network it acts with and what that network returns (head: 'logits' for an actor-critic's
    (logits, values), 'q_values' for a Q network's [N, A]), so that common.watch,
    common.export and common.results reach the network itself through the papers' loading, and
    the evaluation protocol it acts by (its epsilon, or sampling or argmax pi), which
    common.evaluate plays (None: built without one)."""
    act: Callable
    network: Any
    head: str
    protocol: Any = None

    def __post_init__(self):
        if self.head not in HEADS:
            raise ValueError(f'Policy.head={self.head!r}; allowed: {HEADS}')

    def __call__(self, observations):
        return self.act(observations)


def epsilon_greedy_policy(learner, epsilon, seed, protocol=None):
    """policy_fn of a Q-learner (common.learners.q_learner): epsilon-greedy on its online network,
    batched (epsilon 0: greedy)."""
    rng = np.random.default_rng(seed)
    num_actions = learner.num_actions

    def policy(observations):
        actions = learner.online_greedy(observations).numpy()
        explore = rng.random(len(actions)) < epsilon
        actions[explore] = rng.integers(num_actions, size=int(explore.sum()))
        return actions

    return Policy(policy, learner.online, 'q_values', protocol)


def q_value_policy(learner, protocol, seed):
    """A Q-learner's policy under protocol: epsilon-greedy at the protocol's epsilon."""
    return epsilon_greedy_policy(learner, protocol.epsilon, seed, protocol)


def q_value_round(config, learner, run_dir, env_steps, trained_seconds):
    """A Q-learner's periodic evaluation round (evaluation_round) by its config's protocol
    (config.evaluation_protocol()), its policy and environments seeded from the step."""
    protocol = config.evaluation_protocol()
    policy = q_value_policy(learner, protocol, config.seed + env_steps)
    return evaluation_round(
        run_dir, env_steps, trained_seconds, lambda: play(
            config.env_config, policy, protocol, seed=config.seed + 7919 + env_steps),
        protocol.budget_text())


def run_protocol(config, kind, greedy=False, choice=None):
    """The protocol a restored run's policy acts and is scored by: its config's
    (config.evaluation_protocol()), or choice's (an eval_protocols.Choice) over it, greedy if
    asked; ConfigError in one line if it states no acting for a policy of kind."""
    protocol = config.evaluation_protocol()
    if choice is not None:
        protocol = choice.apply(protocol)
    if greedy:
        protocol = eval_protocols.greedy(protocol)
    return eval_protocols.require(protocol, 'evaluation protocol', kind, config.env_config)


def actor_critic_policy(run_dir, make_config, make_learner, greedy=False, obsolete=(),
                        moved=None, choice=None):
    """A paper's load_policy for an actor-critic learner with act/greedy_act: the run's
    operative config (without the obsolete bindings, moved names read as today's) into
    make_config(), make_learner(config)'s model from the newest readable checkpoint, acting by
    the run's protocol (run_protocol: pi sampled, or argmax pi). Returns (env_config, policy_fn,
    env_steps)."""
    from common.run import checkpoint as checkpoint_lib  # pylint: disable=import-outside-toplevel
    app.parse_recorded_config(run_dir, obsolete, moved)
    config = launch_config.with_machine_dtype(make_config())
    protocol = run_protocol(config, 'actor_critic', greedy, choice)
    learner = make_learner(config)
    env_steps = checkpoint_lib.restore_latest(run_dir, model=learner.model)
    policy = learner.act if protocol.sample else learner.greedy_act
    return (config.env_config, Policy(lambda observations: policy(observations).numpy(),
                                      learner.model, 'logits', protocol), env_steps)


def load_policy(run_dir, greedy=False, choice=None):
    """The policy of run_dir (a run directory, or a published result with its policy weights)
    through its paper package: (env_config, policy (a Policy, carrying the protocol it acts by:
    the run's, or choice's over it), env_steps). ConfigError or CheckpointError in one line if
    run_dir holds no policy, before any model is built."""
    invocation = app.read_invocation(run_dir)
    if invocation is None:
        raise errors.ConfigError(f'{run_dir!r} is not a run directory (no {app.INVOCATION_FILE}); '
                                 'allowed: a run directory or a published result (docs/results/)')
    from common.run import checkpoint as checkpoint_lib  # pylint: disable=import-outside-toplevel
    checkpoint_lib.policy_source(run_dir)  # it has a checkpoint or published weights
    paper_main = registry.entry_point(invocation.get('paper'))
    return paper_main.load_policy(run_dir, greedy=greedy, choice=choice)


def evaluate_run(run_dir, num_episodes=None, greedy=False, seed=12345, out=None, protocol=None,
                 max_frames=None, epsilon=None):
    """Restores run_dir's policy through its paper package and plays its evaluation protocol
    (the run's, or the named protocol, with num_episodes, max_frames or epsilon over it; greedy:
    epsilon 0 or argmax pi); appends the row to out (default: checkpoint.output_path's,
    RUN/eval.csv, or ./NAME-eval.csv for a published result) and returns it, with the
    protocol's name, and the path."""
    checks.require(out is None or out.endswith('.csv'),
                   f'--out={out!r}; allowed: a file name ending in .csv')
    choice = eval_protocols.Choice(protocol, num_episodes, max_frames, epsilon).check()
    env_config, policy, env_steps = load_policy(run_dir, greedy=greedy, choice=choice)
    from common.run import checkpoint as checkpoint_lib  # pylint: disable=import-outside-toplevel
    out = out or checkpoint_lib.output_path(run_dir, EVAL_FILE)
    trained_seconds = checkpoint_lib.trained_seconds(run_dir)
    start = time.perf_counter()
    scores = play(env_config, policy, policy.protocol, seed)
    checks.require(len(scores) > 0, f'no episode ended within the {policy.protocol.budget_text()}'
                   f" of protocol '{policy.protocol.name}'; --num_episodes=N plays N whole games")
    row = write_eval_row(out, env_steps, scores, time.perf_counter() - start, trained_seconds)
    frame_skip = getattr(env_config, 'frame_skip', None)
    return dict(row, protocol=policy.protocol.describe(frame_skip)), out


def main():
    flags_ = flags.FLAGS
    if not flags_.run_dir:
        app.fail('--run_dir is required')
    row, out = evaluate_run(flags_.run_dir, flags_.num_episodes, flags_.greedy, flags_.seed,
                            flags_.out, flags_.protocol, flags_.max_frames, flags_.epsilon)
    print(f"{row['episodes']} episodes at step {row['env_steps']:,}: mean {row['score_mean']:.2f}"
          f" min {row['score_min']:.1f} max {row['score_max']:.1f} std {row['score_std']:.2f}"
          f" ({row['protocol']}) -> {out}")


if __name__ == '__main__':
    # A command here, a library to the papers: set up only when run (nothing above loads
    # TensorFlow).
    from common.launch import process_setup  # pylint: disable=ungrouped-imports
    process_setup.configure()
    flags.DEFINE_string('protocol', None, 'Evaluation protocol to play (common/envs/'
                        f"eval_protocols.py: {', '.join(eval_protocols.PROTOCOLS)}); default: "
                        "the run's (its config's eval_protocol).")
    flags.DEFINE_integer('num_episodes', None, "Episodes to play; default: the protocol's (a "
                         'step-budget protocol plays this many episodes instead).')
    flags.DEFINE_integer('max_frames', None, "Episode cap in emulator frames; default: the "
                         "protocol's.")
    flags.DEFINE_float('epsilon', None, "A Q-value policy's epsilon; default: the protocol's.")
    flags.DEFINE_boolean('greedy', False, 'Act greedily: epsilon 0 for a Q-value policy, argmax '
                         "pi for an actor-critic's (instead of the protocol's epsilon, or actions "
                         'drawn from pi).')
    flags.DEFINE_integer('seed', 12345, 'Seed of the evaluation environments.')
    flags.DEFINE_string('out', None, f'CSV to append the result to; default RUN_DIR/{EVAL_FILE}, '
                        f'or ./NAME-{EVAL_FILE} for a published result (docs/results/NAME is '
                        'not written to).')
    app.execute(main)
