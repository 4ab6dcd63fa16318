"""The scripts under examples/ run as a researcher would run them (in a fresh process), write the
run files they describe, resume, learn what their docstrings claim on two seeds (by a criterion a
random policy fails), and take from common/ only the names its modules export (their __all__)."""
import ast
import glob
import importlib
import math
import os
import re
import subprocess
import sys

import gymnasium
import numpy as np
import pytest

from common.launch import app
from common.tools import run_files

ROOT = app.PROJECT_ROOT
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, 'examples', '*.py')))
SUMMARY = re.compile(r'^(\w+) CartPole-v1: (\d+) steps, (\d+) episodes, '
                     r'mean return of the last 100: ([\d.]+)$', re.MULTILINE)


def _run(script, *flags):
    path = os.environ.get('PYTHONPATH')
    env = dict(os.environ, PYTHONPATH=ROOT + (os.pathsep + path if path else ''))
    return subprocess.run([sys.executable, os.path.join(ROOT, 'examples', script), *flags],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _summary(result):
    """(steps, episodes, mean return) of an example's last line, after checking it ended well."""
    assert result.returncode == 0, result.stderr[-3000:]
    found = SUMMARY.findall(result.stdout)
    assert len(found) == 1, result.stdout[-2000:]
    _, steps, episodes, score = found[0]
    return int(steps), int(episodes), float(score)


def _check_run_files(run_dir, steps, episodes, score, updates):
    rows = run_files.read_csv(os.path.join(run_dir, 'metrics.csv'))
    assert int(rows[-1]['env_steps']) == steps and int(rows[-1]['updates']) == updates
    assert math.isfinite(float(rows[-1]['loss']))
    scores = [float(row['score']) for row in run_files.read_csv(
        os.path.join(run_dir, 'episodes.csv'))]
    assert len(scores) == episodes > 0
    assert score == pytest.approx(sum(scores[-100:]) / len(scores[-100:]), abs=0.05)
    assert 8 <= score <= 500  # CartPole's returns
    assert glob.glob(os.path.join(run_dir, 'checkpoints', 'ckpt-*.index'))


@pytest.mark.slow
def test_a2c_example_trains_on_worker_processes_and_resumes(tmp_path):
    flags = ['--num_envs=4', '--pool=process', f'--out_dir={tmp_path}']
    first = _run('a2c_cartpole.py', '--steps=400', *flags)
    steps, episodes, score = _summary(first)
    assert steps == 400 and 'steps/s' in first.stdout  # the progress lines
    _check_run_files(tmp_path, 400, episodes, score, updates=400 // (4 * 5))
    longer = _run('a2c_cartpole.py', '--steps=600', *flags)
    steps, episodes, score = _summary(longer)
    assert 'resuming from' in longer.stdout and steps == 600
    _check_run_files(tmp_path, 600, episodes, score, updates=600 // (4 * 5))


@pytest.mark.slow
def test_dqn_example_trains_from_replay(tmp_path):
    result = _run('dqn_cartpole.py', '--steps=320', '--min_replay_steps=128',
                  f'--out_dir={tmp_path}')
    steps, episodes, score = _summary(result)
    assert steps == 320
    # 16 steps a phase; replay holds 128 after the 8th, which trains: phases 8-20, 16 updates.
    _check_run_files(tmp_path, 320, episodes, score, updates=13 * 16)
    assert int(run_files.read_csv(tmp_path / 'metrics.csv')[-1]['replay_size']) == 320


@pytest.mark.slow
def test_a_bad_flag_is_named_in_one_line(tmp_path):
    result = _run('a2c_cartpole.py', '--num_envs=5', f'--out_dir={tmp_path}')
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if 'num_envs' in line]
    assert len(errors) == 1 and '5' in errors[0] and 'must be even' in errors[0], result.stderr
    assert not os.listdir(tmp_path)


SEEDS = (0, 1)


def _a2c_claim(episodes):
    """The A2C docstring: the last 100 episodes average over 250 at 150k steps."""
    scores = [score for _, score in episodes]
    return len(scores) >= 100 and np.mean(scores[-100:]) > 250


def _dqn_claim(episodes):
    """The DQN docstring: an episode reaches 500 (CartPole-v1's cap) before 25k steps, and the last
    100 average over 150 at 30k steps."""
    scores = [score for _, score in episodes]
    return (any(score >= 500 for steps, score in episodes if steps < 25_000)
            and len(scores) >= 100 and np.mean(scores[-100:]) > 150)


CLAIMS = {'a2c_cartpole.py': (150_000, _a2c_claim), 'dqn_cartpole.py': (30_000, _dqn_claim)}


def _random_episodes(steps, seed):
    """(env steps at its end, return) of each CartPole-v1 episode of uniform random actions."""
    env = gymnasium.make('CartPole-v1')
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    episodes, total, score = [], 0, 0.0
    while total < steps:
        _, reward, terminated, truncated, _ = env.step(int(rng.integers(2)))
        total, score = total + 1, score + reward
        if terminated or truncated:
            episodes.append((total, score))
            score = 0.0
            env.reset()
    return episodes


@pytest.mark.slow
@pytest.mark.parametrize('script', sorted(CLAIMS))
def test_a_random_policy_fails_each_claim(script):
    steps, claim = CLAIMS[script]
    for seed in SEEDS:
        episodes = _random_episodes(steps, seed)
        assert 15 < np.mean([score for _, score in episodes]) < 30  # CartPole's random level
        assert not claim(episodes)


@pytest.mark.slow
@pytest.mark.parametrize('seed', SEEDS)
@pytest.mark.parametrize('script', sorted(CLAIMS))
def test_each_example_learns_what_its_docstring_claims(script, seed, tmp_path):
    steps, claim = CLAIMS[script]
    docstring = open(os.path.join(ROOT, 'examples', script)).read()
    assert f'--steps={steps}' in docstring  # the budget the docstring names
    result = _run(script, f'--steps={steps}', f'--seed={seed}',
                                f'--out_dir={tmp_path}')
    assert _summary(result)[0] == steps
    episodes = [(int(row['env_steps']), float(row['score']))
                for row in run_files.read_csv(os.path.join(tmp_path, 'episodes.csv'))]
    assert claim(episodes), (script, seed, [score for _, score in episodes[-100:]])


def _submodule(module, name):
    """module's submodule name (imported), or None if name is not one."""
    if not hasattr(module, '__path__'):
        return None
    try:
        return importlib.import_module(f'{module.__name__}.{name}')
    except ModuleNotFoundError:
        return None


def _common_names(path):
    """(module, name) for every name an example takes from a module of common: imported from
    it, or read as an attribute of it. Submodules are followed, not counted."""
    tree = ast.parse(open(path).read(), path)
    modules, names = {}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split('.')[0] == 'common':
                    local = alias.asname or 'common'
                    modules[local] = alias.name if alias.asname else 'common'
        elif isinstance(node, ast.ImportFrom) and (node.module or '').split('.')[0] == 'common':
            parent = importlib.import_module(node.module)
            for alias in node.names:
                if _submodule(parent, alias.name):
                    modules[alias.asname or alias.name] = f'{node.module}.{alias.name}'
                else:
                    names.append((parent, alias.name))
    for node in ast.walk(tree):
        chain = []
        while isinstance(node, ast.Attribute):
            chain.insert(0, node.attr)
            node = node.value
        if chain and isinstance(node, ast.Name) and node.id in modules:
            module = importlib.import_module(modules[node.id])
            for name in chain:
                submodule = _submodule(module, name)
                if submodule is None:
                    names.append((module, name))
                    break
                module = submodule
    return names


@pytest.mark.parametrize('path', EXAMPLES, ids=os.path.basename)
def test_examples_take_only_the_public_names_of_common(path):
    names = _common_names(path)
    assert names, path
    for module, name in names:
        exported = getattr(module, '__all__', None)
        assert exported is not None, f'{module.__name__} has no __all__'
        missing = [item for item in exported if not hasattr(module, item)]
        assert not missing, f'{module.__name__}.__all__ names {missing}, which it lacks'
        assert name in exported, f'{os.path.basename(path)} uses {module.__name__}.{name}, ' \
                                 f'not in its __all__'


def test_the_checker_sees_imported_and_attribute_names(tmp_path):
    probe = tmp_path / 'probe.py'
    probe.write_text('from common.envs import pools\nfrom common.run.tracker import RunTracker\n'
                     'import common.units.samplers as s\npools._check_int\ns.make_sampler\n')
    found = {(module.__name__, name) for module, name in _common_names(str(probe))}
    assert found == {('common.envs.pools', '_check_int'), ('common.run.tracker', 'RunTracker'),
                     ('common.units.samplers', 'make_sampler')}
