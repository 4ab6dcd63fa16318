"""Evaluation protocol: 30 episodes, up to 30 no-op starts, an 18,000-step cap; appends to a CSV.

`python -m common.evaluate --run_dir=runs/paac-pong-...` restores the run's latest checkpoint
(or a published result's policy weights, docs/results/NAME) through its paper package
(`<paper>_tf.main.load_policy`) and plays the episodes side by side in one batched pool, so
evaluation costs one inference per step for all episodes. The row goes to RUN/eval.csv, or for a
published result (a record, not written to) to ./NAME-eval.csv; --out chooses another CSV.
"""
import csv
import dataclasses
import os
import time
from typing import Any, Callable

from absl import flags
import gin
import numpy as np

from common.envs import atari
from common.envs import pools
from common.launch import app
from common.launch import registry
from common.run import checks
from common.run import errors

EVAL_FILE = 'eval.csv'
EVAL_COLUMNS = ('wall_time', 'env_steps', 'episodes', 'score_mean', 'score_min', 'score_max',
                'score_std', 'seconds')


@gin.configurable
def evaluation_env_config(env_config, noop_max=30, max_episode_steps=18000):
    """The training env config with the evaluation protocol's starts and cap.

    Evaluation always plays whole games: episodic life is off whatever training used.
    """
    if isinstance(env_config, atari.AtariConfig):
        return dataclasses.replace(env_config, noop_max=noop_max,
                                   max_episode_steps=max_episode_steps, episodic_life=False)
    return env_config


def run_episodes(env_config, policy_fn, num_episodes, seed=12345):
    """Plays num_episodes episodes, one per environment in a serial pool; returns their scores.

    policy_fn maps a (num_episodes, ...) observation batch to actions. Each environment's first
    finished episode counts; environments that finished keep stepping until all have.
    """
    if num_episodes <= 0:
        raise ValueError(f'num_episodes must be > 0, got {num_episodes}')
    scores = np.full(num_episodes, np.nan)
    finished = np.zeros(num_episodes, bool)
    with pools.SerialPool(env_config, num_episodes, seed=seed) as pool:
        observations = pool.reset()
        while not finished.all():
            result = pool.step(np.asarray(policy_fn(observations)))
            newly_finished = result.dones & ~finished
            scores[newly_finished] = result.episode_returns[newly_finished]
            finished |= result.dones
            observations = result.observations
    return scores


def run_for_steps(env_config, policy_fn, num_envs, max_steps, seed=12345):
    """Plays num_envs environments side by side for max_steps steps in all (Stooke & Abbeel
    2018, section 4.2: "evaluate for up to 125,000 steps"); returns the scores of the episodes
    that ended within them, in the order they ended (none if no episode ended)."""
    if num_envs <= 0 or max_steps < num_envs:
        raise ValueError(f'need num_envs > 0 and max_steps >= num_envs, got {num_envs} and '
                         f'{max_steps}')
    scores = []
    with pools.SerialPool(env_config, num_envs, seed=seed) as pool:
        observations = pool.reset()
        for _ in range(max_steps // num_envs):
            result = pool.step(np.asarray(policy_fn(observations)))
            scores.extend(result.episode_returns[result.dones].tolist())
            observations = result.observations
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
    common.export and common.results reach the network itself through the papers' loading."""
    act: Callable
    network: Any
    head: str

    def __post_init__(self):
        if self.head not in HEADS:
            raise ValueError(f'Policy.head={self.head!r}; allowed: {HEADS}')

    def __call__(self, observations):
        return self.act(observations)


def epsilon_greedy_policy(learner, epsilon, seed):
    """policy_fn of a Q-learner (common.learners.q_learner): epsilon-greedy on its online network,
    batched."""
    rng = np.random.default_rng(seed)
    num_actions = learner.num_actions

    def policy(observations):
        actions = learner.online_greedy(observations).numpy()
        explore = rng.random(len(actions)) < epsilon
        actions[explore] = rng.integers(num_actions, size=int(explore.sum()))
        return actions

    return Policy(policy, learner.online, 'q_values')


def actor_critic_policy(run_dir, make_config, make_learner, greedy=False, obsolete=(),
                        moved=None):
    """A paper's load_policy for an actor-critic learner with act/greedy_act: the run's
    operative config (without the obsolete bindings, moved names read as today's) into
    make_config(), make_learner(config)'s model from the newest readable checkpoint. Returns
    (env_config, policy_fn, env_steps)."""
    from common.run import checkpoint as checkpoint_lib  # pylint: disable=import-outside-toplevel
    app.parse_recorded_config(run_dir, obsolete, moved)
    config = make_config()
    learner = make_learner(config)
    env_steps = checkpoint_lib.restore_latest(run_dir, model=learner.model)
    policy = learner.greedy_act if greedy else learner.act
    return (config.env_config, Policy(lambda observations: policy(observations).numpy(),
                                      learner.model, 'logits'), env_steps)


def load_policy(run_dir, greedy=False):
    """The policy of run_dir (a run directory, or a published result with its policy weights)
    through its paper package: (env_config, policy (a Policy), env_steps). ConfigError or
    CheckpointError in one line if run_dir holds no policy, before any model is built."""
    invocation = app.read_invocation(run_dir)
    if invocation is None:
        raise errors.ConfigError(f'{run_dir!r} is not a run directory (no {app.INVOCATION_FILE}); '
                                 'allowed: a run directory or a published result (docs/results/)')
    from common.run import checkpoint as checkpoint_lib  # pylint: disable=import-outside-toplevel
    checkpoint_lib.policy_source(run_dir)  # it has a checkpoint or published weights
    paper_main = registry.entry_point(invocation.get('paper'))
    return paper_main.load_policy(run_dir, greedy=greedy)


def evaluate_run(run_dir, num_episodes=30, greedy=False, seed=12345, out=None,
                 max_episode_steps=None):
    """Restores run_dir's policy through its paper package and evaluates it; appends the row to
    out (default: checkpoint.output_path's, RUN/eval.csv, or ./NAME-eval.csv for a published
    result) and returns it with the path. max_episode_steps: the protocol's cap, if not the
    gin-configured evaluation_env_config's."""
    checks.require(out is None or out.endswith('.csv'),
                   f'--out={out!r}; allowed: a file name ending in .csv')
    env_config, policy_fn, env_steps = load_policy(run_dir, greedy=greedy)
    from common.run import checkpoint as checkpoint_lib  # pylint: disable=import-outside-toplevel
    out = out or checkpoint_lib.output_path(run_dir, EVAL_FILE)
    trained_seconds = checkpoint_lib.trained_seconds(run_dir)
    start = time.perf_counter()
    cap = {} if max_episode_steps is None else {'max_episode_steps': max_episode_steps}
    scores = run_episodes(evaluation_env_config(env_config, **cap), policy_fn, num_episodes, seed)
    row = write_eval_row(out, env_steps, scores, time.perf_counter() - start, trained_seconds)
    return row, out


def main():
    flags_ = flags.FLAGS
    if not flags_.run_dir:
        app.fail('--run_dir is required')
    if flags_.num_episodes <= 0:
        app.fail(f'--num_episodes must be > 0, got {flags_.num_episodes}')
    row, out = evaluate_run(flags_.run_dir, flags_.num_episodes, flags_.greedy, flags_.seed,
                            flags_.out)
    print(f"{row['episodes']} episodes at step {row['env_steps']:,}: mean {row['score_mean']:.2f}"
          f" min {row['score_min']:.1f} max {row['score_max']:.1f} std {row['score_std']:.2f}"
          f" -> {out}")


if __name__ == '__main__':
    # A command here, a library to the papers: set up only when run (nothing above loads
    # TensorFlow).
    from common.launch import process_setup  # pylint: disable=ungrouped-imports
    process_setup.configure()
    flags.DEFINE_integer('num_episodes', 30, 'Episodes to play.')
    flags.DEFINE_boolean('greedy', False, 'Act greedily instead of sampling from the policy.')
    flags.DEFINE_integer('seed', 12345, 'Seed of the evaluation environments.')
    flags.DEFINE_string('out', None, f'CSV to append the result to; default RUN_DIR/{EVAL_FILE}, '
                        f'or ./NAME-{EVAL_FILE} for a published result (docs/results/NAME is '
                        'not written to).')
    app.execute(main)
