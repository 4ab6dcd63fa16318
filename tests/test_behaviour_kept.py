"""Evidence that the redesign (one training runner, one shape of entry point, common/ split into
role folders) keeps behaviour, made by the code before it (commit
f623b5ffe84d8a5aa0474d62a47b238db5fde57e):

1. Checkpoints: tests/fixtures/checkpoints/<name>/ is a run directory that the entry point of
   that commit wrote (CartPole-v1, 'mlp' network, a few hundred steps; made by
   tests/fixtures/make_checkpoints.py). A copy resumes through the same public command with a
   larger total_steps: it says it resumes at the fixture's step and finishes with exit status 0.
2. Updates: one update of each learner (PPO and APPO: one optimization phase) on a fixed,
   seeded batch gives the weights in tests/fixtures/updates/<name>.npz (written by
   tests/fixtures/make_updates.py at that commit), to rtol 1e-5, atol 1e-6.

Only the construction section below may change after the redesign; the fixtures may not.
"""
import importlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / 'tests' / 'fixtures'

# ================================================================================================
# Construction of the learners. After the redesign ONLY the functions of this section may change
# (imports, module paths, builder names, and the spelling of config classes, presets and bindings
# that moved, keeping every value they set); the reference weights in
# tests/fixtures/updates/*.npz may not. Each function builds one learner from a
# CartPole-v1 config with a fixed seed, applies one update (PPO, APPO: one optimization phase)
# to the fixed batch it is given, and returns (weights before, weights after): the model's
# trainable variables as numpy arrays, in the order the model lists them at commit f623b5f
# (torso layers, then the policy head, then the value head; a Q network's own order).
# Imports are inside the functions so that a moved module fails only its own test.
# ================================================================================================

TINY_MLP = "{'hidden_sizes': (16,)}"
SEED = 1


def _values(variables):
    return [np.array(variable.numpy()) for variable in variables]


def _gin(path):
    return str(ROOT / path)


ACCEL_CARTPOLE = [
    'AccelConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'",
    "AccelConfig.network = 'mlp'", f'AccelConfig.torso_kwargs = {TINY_MLP}',
    'AccelConfig.num_workers = 1', 'AccelConfig.envs_per_worker = 4',  # the rollout's N
    'AccelConfig.horizon = 5',  # the rollout's T
    f'AccelConfig.seed = {SEED}', 'AccelConfig.total_steps = 1000']
ACCEL_Q = [
    'QValueConfig.batch_size = 32', 'QValueConfig.min_replay_steps = 64',
    'QValueConfig.replay_capacity = 2000', 'QValueConfig.target_period = 64']


def _accel_config(preset, bindings=()):
    from accel_tf import main  # pylint: disable=import-outside-toplevel
    return main.configure([_gin(f'gin/accel/{preset}.gin')], ACCEL_CARTPOLE + list(bindings))


def paac_update(rollout):
    """PAAC's actor-critic learner (gin/paac/paper.gin) on a (T + 1, N) rollout."""
    from paac_tf import main, paac  # pylint: disable=import-outside-toplevel
    config = main.configure([_gin('gin/paac/paper.gin')], [
        'PAACConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'",
        "PAACConfig.network = 'mlp'", 'PAACConfig.num_envs = 4', 'PAACConfig.num_workers = 1',
        'PAACConfig.t_max = 5', f'PAACConfig.seed = {SEED}', 'PAACConfig.total_steps = 1000'])
    learner = paac.build_learner(config)
    before = _values(learner.model.trainable_variables)
    learner.train_on_rollout(*rollout)
    return before, _values(learner.model.trainable_variables)


# A2C's and A3C's 7e-4 (scaled to 3.5e-4 for 4 environments) moves CartPole's weights by about
# 5e-5 in one step, too close to the tolerance for the comparison to see much of the update.
LARGER_RATE = ['AccelConfig.learning_rate = 0.05']


def accel_a2c_update(rollout):
    """The accelerated methods' A2C learner (gin/accel/a2c_pong.gin) on a rollout."""
    from accel_tf import kinds  # pylint: disable=import-outside-toplevel
    learner = kinds.build_learner(_accel_config('a2c_pong', LARGER_RATE))
    before = _values(learner.model.trainable_variables)
    learner.train_on_rollout(*rollout)
    return before, _values(learner.model.trainable_variables)


# PPO's 2.5e-4 (APPO's 6.25e-5) leaves every ratio inside the clip over one phase here; at 3e-3
# the phase clips (7.5% of the minibatch samples), so the clipped objective is what is checked.
PPO_RATE = ['AccelConfig.learning_rate = 0.003']


# The schedules off: since f623b5f they follow environment steps, held through a phase (rlpyt's
# 1 - itr / n_itr), where they decayed with every gradient step of it; tests/accel_tf/test_ppo.py
# checks them. The reference was remade at f623b5f with these bindings (ANNEALING_OFF there
# named AccelConfig.anneal_ratio_clip, its place then).
ANNEALING_OFF = ['AccelConfig.anneal_learning_rate = False', 'PPOConfig.anneal_ratio_clip = False']


def accel_ppo_update(rollout):
    """One PPO optimization phase (gin/accel/ppo_pong.gin: 4 epochs x 4 minibatches)."""
    from accel_tf import kinds  # pylint: disable=import-outside-toplevel
    learner = kinds.build_learner(_accel_config('ppo_pong', PPO_RATE + ANNEALING_OFF))
    before = _values(learner.model.trainable_variables)
    learner.train_on_rollout(*rollout)
    return before, _values(learner.model.trainable_variables)


class _PlaybackSampler:
    """A sampler that plays back a fixed rollout's observations, rewards and terminals and
    records the policy's actions, as the real sampler does: what an actor-learner collects
    from, without environments."""

    def __init__(self, rollout):
        from common.units import samplers  # pylint: disable=import-outside-toplevel
        observations, _, rewards, terminals = rollout
        self.rollout = samplers.Rollout(rewards.shape[0], rewards.shape[1],
                                        observations.shape[2:], observations.dtype)
        self.rollout.observations[:] = observations
        self.rollout.rewards[:] = rewards
        self.rollout.terminals[:] = terminals

    def collect(self, policy):
        for step in range(self.rollout.horizon):
            self.rollout.actions[step] = policy(self.rollout.observations[step])
        return []


def _actor_learner_update(preset, rollout, bindings=()):
    """One iteration of A3C's or APPO's actor-learner on a central store holding the model's
    initial weights. The rollout's actions are the actor-learner's own samples (its learner's
    seeded generator, as in a run); the fixed batch's actions are not used."""
    # pylint: disable=import-outside-toplevel
    from accel_tf import kinds
    from common.units import async_learners
    config = _accel_config(preset, bindings)
    learner = kinds.build_learner(config)
    variables = learner.model.trainable_variables
    before = _values(variables)
    size = sum(int(np.prod(variable.shape)) for variable in variables)
    state = async_learners.CentralState(size, kinds.slot_initial_values(config))
    store = async_learners.create_store(variables, state, config.async_learners.num_chunks)
    try:
        actor_learner = kinds.actor_learner_class(config)(
            config, learner, _PlaybackSampler(rollout), store, seed=SEED)
        actor_learner.iterate()
        after = np.array(store.pull())
    finally:
        store.close()
    async_learners.assign_flat(variables, after)  # the central weights, in the model's shapes
    return before, _values(variables)


def accel_a3c_update(rollout):
    """A3C's actor-learner (gin/accel/a3c_pong.gin): its gradient applied to the central store
    by RMSProp with the central mean squares."""
    return _actor_learner_update('a3c_pong', rollout, LARGER_RATE)


def accel_appo_update(rollout):
    """APPO's actor-learner (gin/accel/appo_pong.gin): one PPO phase of local Adam steps,
    synchronized with the central store after each (local_steps_per_sync 1)."""
    return _actor_learner_update('appo_pong', rollout, PPO_RATE)


def ga3c_update(sequences):
    """GA3C's learner (gin/ga3c/original_code.gin) on agents' sequences laid end to end, as its
    trainer threads call it."""
    from ga3c_tf import learner as learner_lib  # pylint: disable=import-outside-toplevel
    from ga3c_tf import main  # pylint: disable=import-outside-toplevel
    config = main.configure([_gin('gin/ga3c/original_code.gin')], [
        'GA3CConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'",
        "GA3CConfig.network = 'mlp'", f'GA3CConfig.torso_kwargs = {TINY_MLP}',
        'GA3CConfig.dynamic_settings = False', f'GA3CConfig.seed = {SEED}',
        'GA3CConfig.total_steps = 1000'])
    learner = learner_lib.build_learner(config)
    before = _values(learner.model.trainable_variables)
    learner.train_on_sequences(*sequences)
    return before, _values(learner.model.trainable_variables)


def dqn_update(transitions):
    """Fast DQN's Q-learner (gin/dqn/pong.gin: Nature DQN's loss, centered RMSProp): one
    minibatch update of the online network."""
    from dqn_tf import dqn, main  # pylint: disable=import-outside-toplevel
    config = main.configure([_gin('gin/dqn/pong.gin')], [
        'DQNConfig.env_config = @GymConfig()', "GymConfig.env_id = 'CartPole-v1'",
        "DQNConfig.network = 'mlp'", f'DQNConfig.torso_kwargs = {TINY_MLP}',
        'DQNConfig.num_samplers = 2', 'DQNConfig.target_period = 100',
        'DQNConfig.replay_capacity = 1000', 'DQNConfig.prepopulate_steps = 100',
        f'DQNConfig.seed = {SEED}', 'DQNConfig.total_steps = 1000'])
    learner = dqn.build_learner(config)
    before = _values(learner.online.trainable_variables)
    learner.train_step(*transitions[:5])
    return before, _values(learner.online.trainable_variables)


def accel_dqn_update(transitions):
    """The accelerated methods' DQN (gin/accel/dqn_pong.gin): one minibatch update, through
    the call its off-policy runner makes (a stack of the phase's minibatches, here one)."""
    from accel_tf import learners  # pylint: disable=import-outside-toplevel
    learner = learners.build_q_learner(_accel_config('dqn_pong', ACCEL_Q))
    before = _values(learner.online.trainable_variables)
    learner.train_steps(*[field[None] for field in transitions[:5]])
    return before, _values(learner.online.trainable_variables)


def accel_rainbow_update(transitions):
    """eps-Rainbow's categorical Q-learner (gin/accel/rainbow_pong.gin: double, dueling,
    3-step, prioritized): one importance-weighted minibatch update."""
    from accel_tf import learners  # pylint: disable=import-outside-toplevel
    # At 1e-3 (tests/accel_tf/test_q_family.py's CartPole rate), not Atari's 6.25e-5.
    learner = learners.build_q_learner(_accel_config('rainbow_pong', ACCEL_Q + [
        'QValueConfig.v_min = 0.0', 'QValueConfig.v_max = 100.0',
        'AccelConfig.learning_rate = 0.001']))
    before = _values(learner.online.trainable_variables)
    learner.weighted_train_step(*transitions)
    return before, _values(learner.online.trainable_variables)


# ================================================================================================
# Nothing below this line changes with the redesign.
# ================================================================================================

T, N = 5, 4           # rollouts: T steps of N CartPole environments
SEQUENCE_LENGTH = 5   # GA3C: N agents' sequences of 5 steps, laid end to end
BATCH = 32            # Q-learning minibatch


def _observations(rng, shape):
    """CartPole-like states: position, velocity, angle (radians), angular velocity."""
    return (rng.normal(size=shape + (4,)) * np.array([1.0, 1.0, 0.1, 1.0])).astype(np.float32)


def fixed_rollout():
    """(observations [T + 1, N, 4], actions [T, N], rewards, terminals)."""
    rng = np.random.default_rng(20240601)
    return (_observations(rng, (T + 1, N)), rng.integers(0, 2, (T, N)).astype(np.int32),
            rng.uniform(-1, 1, (T, N)).astype(np.float32),
            (rng.random((T, N)) < 0.15).astype(np.float32))


def fixed_sequences():
    """(observations [B, 4], actions, rewards, sequence ends, end values) of N sequences."""
    rng = np.random.default_rng(20240602)
    size = N * SEQUENCE_LENGTH
    ends = np.zeros(size, np.float32)
    ends[SEQUENCE_LENGTH - 1::SEQUENCE_LENGTH] = 1.0
    end_values = np.where(ends > 0, rng.normal(size=size) * 5, 0.0).astype(np.float32)
    end_values[SEQUENCE_LENGTH - 1] = 0.0  # the first agent's sequence ended its episode
    return (_observations(rng, (size,)), rng.integers(0, 2, size).astype(np.int32),
            rng.uniform(-1, 1, size).astype(np.float32), ends, end_values)


def fixed_transitions():
    """(observations [B, 4], actions, rewards, next observations, terminals, importance
    weights)."""
    rng = np.random.default_rng(20240603)
    return (_observations(rng, (BATCH,)), rng.integers(0, 2, BATCH).astype(np.int32),
            rng.uniform(0, 3, BATCH).astype(np.float32), _observations(rng, (BATCH,)),
            (rng.random(BATCH) < 0.15).astype(np.float32),
            rng.uniform(0.2, 1.0, BATCH).astype(np.float32))


# name: (construction function, batch)
UPDATES = {
    'paac': (paac_update, fixed_rollout),
    'accel_a2c': (accel_a2c_update, fixed_rollout),
    'accel_ppo': (accel_ppo_update, fixed_rollout),
    'accel_a3c': (accel_a3c_update, fixed_rollout),
    'accel_appo': (accel_appo_update, fixed_rollout),
    'ga3c': (ga3c_update, fixed_sequences),
    'dqn': (dqn_update, fixed_transitions),
    'accel_dqn': (accel_dqn_update, fixed_transitions),
    'accel_rainbow': (accel_rainbow_update, fixed_transitions),
}
RTOL, ATOL = 1e-5, 1e-6


def apply_update(name):
    """(weights before, weights after) of UPDATES[name]'s learner on its fixed batch."""
    build_and_update, batch = UPDATES[name]
    return build_and_update(batch())


def save_reference(path, before, after):
    np.savez(path, **{f'before_{index}': value for index, value in enumerate(before)},
             **{f'after_{index}': value for index, value in enumerate(after)})


def load_reference(path):
    with np.load(path) as data:
        count = len([key for key in data.files if key.startswith('after_')])
        return ([data[f'before_{index}'] for index in range(count)],
                [data[f'after_{index}'] for index in range(count)])


def assert_same_weights(actual, expected, what):
    assert [value.shape for value in actual] == [value.shape for value in expected], what
    for index, (got, want) in enumerate(zip(actual, expected)):
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL,
                                   err_msg=f'{what}, variable {index}')


def check_update(name, reference_path):
    """Raises AssertionError unless the update of UPDATES[name] reproduces reference_path."""
    want_before, want_after = load_reference(reference_path)
    before, after = apply_update(name)
    # The initial weights first: a difference there is in the construction, not the update.
    assert_same_weights(before, want_before, f'{name}: initial weights')
    assert_same_weights(after, want_after, f'{name}: weights after one update')


@pytest.mark.slow
@pytest.mark.parametrize('name', sorted(UPDATES))
def test_one_update_on_a_fixed_batch_gives_the_reference_weights(name):
    reference = FIXTURES / 'updates' / f'{name}.npz'
    want_before, want_after = load_reference(reference)
    # The update moves nearly every weight beyond the tolerance: the check sees the update.
    moved = np.mean(np.concatenate([
        (np.abs(after - before) > ATOL + RTOL * np.abs(after)).ravel()
        for after, before in zip(want_after, want_before)]))
    assert moved > 0.9, moved
    check_update(name, reference)


def test_a_reference_moved_by_three_tolerances_in_one_value_fails_the_check(tmp_path):
    """The check itself: a copy of a reference with one weight after the update moved by 3x
    the tolerance fails."""
    before, after = load_reference(FIXTURES / 'updates' / 'paac.npz')
    moved = after[-1].copy()
    index = np.argmax(np.abs(moved))
    moved.flat[index] += 3 * (ATOL + RTOL * abs(moved.flat[index]))
    perturbed = tmp_path / 'paac.npz'
    save_reference(perturbed, before, after[:-1] + [moved])
    with pytest.raises(AssertionError, match='weights after one update'):
        check_update('paac', perturbed)


def _checkpoint_fixtures():
    with open(FIXTURES / 'checkpoints' / 'fixtures.json') as f:
        return json.load(f)['fixtures']


CHECKPOINTS = _checkpoint_fixtures()


@pytest.mark.slow
@pytest.mark.parametrize('name', sorted(CHECKPOINTS))
def test_checkpoint_of_the_pre_redesign_code_resumes(tmp_path, name):
    fixture = CHECKPOINTS[name]
    run_dir = tmp_path / name
    shutil.copytree(FIXTURES / 'checkpoints' / name, run_dir)
    # Bindings renamed since (a paper's MOVED: old name -> new) are given by their new names.
    moved = getattr(importlib.import_module(fixture['module']), 'MOVED', {})
    bindings = [re.sub(r'^[\w.]+', lambda name: moved.get(name.group(0), name.group(0)), binding)
                for binding in fixture['gin_bindings']]
    (steps_binding,) = [binding for binding in bindings if '.total_steps' in binding]
    bindings.append(re.sub(r'=.*', f"= {fixture['resume_total_steps']}", steps_binding))
    # The command that made it (tests/fixtures/make_checkpoints.py), with more steps.
    command = [sys.executable, '-m', fixture['module'],
               f"--gin_file={ROOT / fixture['gin_file']}"] + [
        f'--gin_bindings={binding}' for binding in bindings] + [f'--run_dir={run_dir}']
    result = subprocess.run(command, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    steps = fixture['steps']
    assert re.search(rf'resuming from \S+ at step {steps:,}\b', result.stdout), result.stdout
    assert 'damaged' not in result.stderr, result.stderr[-3000:]
    saved = [int(found.group(1)) for found in map(
        re.compile(r'ckpt-(\d+)\.index$').match, os.listdir(run_dir / 'checkpoints')) if found]
    assert max(saved) >= fixture['resume_total_steps'], saved
