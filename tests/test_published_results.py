"""Every run published under docs/results/ carries the policy it ended with, which loads through
its paper package from the published directory alone and acts in its own game: a reader evaluates
or watches a published agent without retraining it. And it is the trained agent, not weights of
the right shape: over a fixed stretch of its game it scores clearly more than random actions on
the same seed."""
import os

import gin
import numpy as np
import pytest

from common import evaluate
from common.envs import pools
from common.launch import app
from common.tools import run_files

RESULTS = os.path.join(app.PROJECT_ROOT, 'docs', 'results')
PUBLISHED = sorted(name for name in os.listdir(RESULTS)
                   if os.path.isdir(os.path.join(RESULTS, name)))


def test_the_papers_runs_are_published():
    assert {'paac-pong', 'ga3c-pong', 'dqn-pong', 'accel-ppo-pong'} <= set(PUBLISHED)


@pytest.mark.parametrize('name', PUBLISHED)
def test_a_published_run_carries_its_final_policy_and_it_plays(name):
    published = os.path.join(RESULTS, name)
    assert {'policy_weights.index', 'policy_weights.data-00000-of-00001'} <= set(
        os.listdir(published))
    try:
        env_config, policy, env_steps = evaluate.load_policy(published, greedy=True)
        # The weights of the run's last checkpoint, taken at or after its last logged row.
        last_row = run_files.read_csv(os.path.join(published, 'metrics.csv'))[-1]
        assert env_steps >= int(float(last_row['env_steps'])) > 0
        with pools.SerialPool(env_config, 1, seed=3) as pool:
            observations = pool.reset()
            actions = np.asarray(policy(observations))
            assert actions.shape == (1,)
            assert 0 <= int(actions[0]) < pool.num_actions
            assert pool.step(actions).observations.shape == observations.shape
    finally:
        gin.clear_config()


SEGMENT_STEPS = 2500  # agent steps: several random Pong games, a few Breakout lives
MARGIN = 10.0  # clipped points; the weakest published agent (-18 on Pong) gains 22 here


def _segment_score(env_config, act, seed=3):
    """The clipped rewards of SEGMENT_STEPS agent steps of one environment, acting by act."""
    total = 0.0
    with pools.SerialPool(env_config, 1, seed=seed) as pool:
        observations = pool.reset()
        for _ in range(SEGMENT_STEPS):
            result = pool.step(np.asarray(act(observations)))
            total += float(result.rewards[0])
            observations = result.observations
    return total


# Published runs that docs/results.md says did not learn within their budget (a sweep point is
# published whatever it shows); their policy is held to that instead.
NOT_LEARNED = {'paac-pong-ne256': 'ne = 256 still uniform over the actions at 5M steps',
               'accel-a2c-pong-envs256': '256 environments still uniform at 5M steps'}


@pytest.mark.parametrize('name', PUBLISHED)
def test_a_published_policy_plays_clearly_better_than_random_actions(name):
    try:
        env_config, policy, _ = evaluate.load_policy(os.path.join(RESULTS, name))
        rng = np.random.default_rng(0)
        num_actions = env_config.num_actions()
        random_score = _segment_score(env_config, lambda obs: rng.integers(num_actions, size=1))
        policy_score = _segment_score(env_config, policy)
        if name in NOT_LEARNED:  # what docs/results.md says of it must stay true
            assert policy_score < random_score + MARGIN, (NOT_LEARNED[name], policy_score)
        else:
            assert policy_score >= random_score + MARGIN, (policy_score, random_score)
    finally:
        gin.clear_config()
