"""A3C and APPO: learner processes on the central store (section 5.1), end to end through
`python -m accel_tf.main` (run directory, policy lag, resume, evaluation, Ctrl-C, a dead
learner) and the A3C actor-learner's update against RMSProp by hand."""
import os
import signal

import numpy as np
import pytest

import common  # noqa: F401
from accel_tf import actor_learners
from accel_tf import config as config_lib
from accel_tf import kinds
from accel_tf import sections
from common.envs import gym as gym_envs
from common.envs import pools
from common.tools import run_files
from common.units import async_learners
from common.units import parameter_store
from common.units import samplers

PRESETS = {'a3c': 'gin/accel/a3c_pong.gin', 'appo': 'gin/accel/appo_pong.gin'}
CARTPOLE_BINDINGS = [
    'AccelConfig.env_config = @GymConfig()',
    "GymConfig.env_id = 'CartPole-v1'",
    "AccelConfig.network = 'mlp'",
    'AccelConfig.num_workers = 1',
    'AccelConfig.envs_per_worker = 2',
    'AccelConfig.horizon = 8',
    'AccelConfig.checkpoint_every_steps = 1000000',
    'AccelConfig.log_every_seconds = 0.5',
]


@pytest.fixture
def cli(entry_point):
    """`python -m accel_tf.main`."""
    return entry_point('accel_tf.main')


def _flags(cli, algorithm, bindings):
    """On algorithm's preset, CartPole's bindings and then bindings."""
    return cli.flags(CARTPOLE_BINDINGS + bindings, PRESETS[algorithm])


@pytest.mark.slow
@pytest.mark.parametrize('algorithm', ['a3c', 'appo'])
def test_run_logs_policy_lag_resumes_and_evaluates(tmp_path, algorithm, process_tree, cli,
                                                   entry_point):
    shm_before = process_tree.shm_entries()
    first = cli.start(_flags(cli, algorithm, ['AccelConfig.total_steps = 2000']) +
                      ['--run_dir=run'], tmp_path)
    stdout, stderr = first.communicate(timeout=240)
    assert first.returncode == 0, stderr[-3000:]
    rows = run_files.read_csv(tmp_path / 'run' / 'metrics.csv')
    reached = int(rows[-1]['env_steps'])
    assert reached >= 2000 and {'policy_lag', 'updates_per_sec', 'entropy'} <= set(rows[-1])
    assert all(float(row['policy_lag']) >= 0 for row in rows if row['policy_lag'] != 'nan')
    assert int(rows[-1]['updates']) > 0
    longer = cli.start(_flags(cli, algorithm, ['AccelConfig.total_steps = 4000']) +
                       ['--run_dir=run'], tmp_path)
    stdout, stderr = longer.communicate(timeout=240)
    assert longer.returncode == 0, stderr[-3000:]
    assert f'resuming from' in stdout and f'at step {reached:,}' in stdout
    rows = run_files.read_csv(tmp_path / 'run' / 'metrics.csv')
    assert int(rows[-1]['env_steps']) >= 4000
    evaluation = entry_point('common.evaluate').run(['--run_dir=run', '--num_episodes=2'],
                                                    tmp_path, timeout=120)
    assert evaluation.returncode == 0, evaluation.stderr[-3000:]
    assert int(run_files.read_csv(tmp_path / 'run' / 'eval.csv')[0]['episodes']) == 2
    assert not process_tree.leaked_shm(shm_before)


def _learner_pids(main_pid, process_tree):
    """The learner processes: the main process's children that have workers of their own."""
    return [pid for pid in process_tree.children(main_pid) if process_tree.children(pid)]


def _started_learning(run_dir):
    path = run_dir / 'metrics.csv'
    return path.exists() and any(int(row['env_steps']) > 0 for row in run_files.read_csv(path))


@pytest.mark.slow
@pytest.mark.parametrize('stop', ['ctrl_c', 'dead_learner'])
def test_ctrl_c_or_a_dead_learner_ends_the_run_with_a_checkpoint(tmp_path, stop, process_tree,
                                                                 errors_in, cli):
    """Either ends the run with a checkpoint and no shared memory left: a SIGKILLed learner
    removes nothing of its own (its pool's segment), so the main process does, where
    multiprocessing's resource tracker would only once every process of the run is gone (with
    a 'leaked shared_memory' warning)."""
    shm_before = process_tree.shm_entries()
    run = cli.start(_flags(cli, 'a3c', ['AccelConfig.total_steps = 100000000']) +
                    ['--run_dir=run'], tmp_path)
    try:
        learner_pids = lambda: _learner_pids(run.pid, process_tree)  # noqa: E731
        assert process_tree.wait_for(lambda: _started_learning(tmp_path / 'run')
                                     and len(learner_pids()) == 2)
        tree = process_tree.descendants(run.pid)  # with multiprocessing's resource tracker
        assert [len(process_tree.children(pid)) for pid in learner_pids()] == [1, 1]
        if stop == 'ctrl_c':
            run.send_signal(signal.SIGINT)
        else:
            os.kill(learner_pids()[0], signal.SIGKILL)
        stdout, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode != 0
    checkpoints = os.listdir(tmp_path / 'run' / 'checkpoints')
    assert any(name.endswith('.index') for name in checkpoints)
    if stop == 'ctrl_c':
        assert 'interrupted at step' in stdout and 'saved' in stdout
    else:
        errors = errors_in(stderr)
        assert len(errors) == 1, stderr[-3000:]
        assert 'learner' in errors[0] and 'died with exit code -9' in errors[0]
        assert 'saved' in errors[0] and 'rerun the same command' in errors[0]
    assert process_tree.wait_for(lambda: not process_tree.alive(tree), 10)
    assert 'leaked shared_memory' not in stderr, stderr[-3000:]
    assert not process_tree.leaked_shm(shm_before)


def test_a3c_actor_learner_applies_rmsprop_with_the_central_mean_squares():
    config = config_lib.AccelConfig(
        env_config=gym_envs.GymConfig('CartPole-v1'), network='mlp', algorithm='a3c',
        num_workers=1, envs_per_worker=3, horizon=4, optimizer='rmsprop', learning_rate=0.01,
        learning_rate_scaling='none', rmsprop_decay=0.9, rmsprop_epsilon=0.1,
        rmsprop_epsilon_inside_sqrt=True, rmsprop_initial_mean_square=1.0,
        actor_critic=sections.ActorCriticConfig(clip_norm=0.0),
        async_learners=sections.AsyncLearnersConfig())
    config.validate()
    learner = kinds.build_learner(config)
    variables = learner.model.trainable_variables
    size = sum(int(np.prod(variable.shape)) for variable in variables)
    store = parameter_store.ParameterStore.create(size, ('mean_square',), num_chunks=3)
    try:
        start = np.random.default_rng(0).normal(size=size).astype(np.float32) * 0.1
        store.parameters[:] = start
        store.slots['mean_square'][:] = 1.0
        with pools.SerialPool(config.env_config, config.num_envs, seed=1) as pool:
            actor_learner = actor_learners.A3CActorLearner(config, learner, samplers.make_sampler(
                'synchronized', pool, config.horizon), store, seed=1)
            np.testing.assert_array_equal(async_learners.flat_values(variables), start)
            steps, _, stats = actor_learner.iterate()
        rollout = actor_learner.sampler.rollout
        async_learners.assign_flat(variables, start)  # the gradient at the pulled parameters
        gradient, _ = learner.flat_rollout_gradients(rollout.observations, rollout.actions,
                                                     rollout.rewards, rollout.terminals)
        gradient = gradient.numpy()
        mean_square = 0.9 * 1.0 + 0.1 * gradient ** 2
        expected = start - 0.01 * gradient / np.sqrt(mean_square + 0.1)
        np.testing.assert_allclose(store.slots['mean_square'], mean_square, rtol=1e-5)
        np.testing.assert_allclose(store.parameters, expected, rtol=1e-5, atol=1e-7)
        # In sync after the update.
        np.testing.assert_array_equal(actor_learner.local, store.parameters)
        assert steps == 12 and stats['updates'] == 1 and stats['policy_lag'] == 0
        assert store.updates == 1
    finally:
        store.close()


@pytest.mark.slow
def test_appo_actor_learner_keeps_its_batch_on_the_device_and_copies_one_vector_per_minibatch(
        monkeypatch):
    """APPO's actor-learner hands the batch sampled_rollout_targets made (device tensors) to
    every minibatch call as it is, with the picked rows of a fresh permutation each epoch; each
    call returns one vector (gradient and statistics), and the actor-learner's statistics are
    their means."""
    from accel_tf import ppo
    config = config_lib.AccelConfig(
        env_config=gym_envs.GymConfig('CartPole-v1'), network='mlp', algorithm='appo',
        num_workers=1, envs_per_worker=2, horizon=6, optimizer='adam', learning_rate=0.01,
        learning_rate_scaling='none', actor_critic=sections.ActorCriticConfig(gae_lambda=0.95),
        ppo=sections.PPOConfig(epochs=2, minibatches=3), appo=sections.APPOConfig(),
        async_learners=sections.AsyncLearnersConfig())
    config.validate()
    learner = kinds.build_learner(config)
    variables = learner.model.trainable_variables
    size = sum(int(np.prod(variable.shape)) for variable in variables)
    targets, calls = [], []
    sampled_rollout_targets = learner.sampled_rollout_targets
    flat_minibatch_gradients = learner.flat_minibatch_gradients

    def record_targets(*args):
        targets.append(sampled_rollout_targets(*args))
        return targets[-1]

    def record_minibatch(*args):
        calls.append((args, flat_minibatch_gradients(*args)))
        return calls[-1][1]

    monkeypatch.setattr(learner, 'sampled_rollout_targets', record_targets)
    monkeypatch.setattr(learner, 'flat_minibatch_gradients', record_minibatch)
    store = parameter_store.ParameterStore.create(size, ('first_moment', 'second_moment'),
                                                  num_chunks=3)
    try:
        store.parameters[:] = async_learners.flat_values(variables)
        with pools.SerialPool(config.env_config, config.num_envs, seed=1) as pool:
            actor_learner = actor_learners.APPOActorLearner(config, learner, samplers.make_sampler(
                'synchronized', pool, config.horizon), store, seed=1)
            steps, _, stats = actor_learner.iterate()
        assert steps == 12 and len(targets) == 1 and len(calls) == 2 * 3
        for args, result in calls:
            assert all(arg is target for arg, target in zip(args[:5], targets[0]))
            assert args[5].dtype == np.int32 and args[5].shape == (4,)
            assert result.shape == (size + len(ppo.MINIBATCH_STATS),)
        for epoch in range(2):
            picked = np.concatenate([args[5] for args, _ in calls[3 * epoch:3 * epoch + 3]])
            assert sorted(picked.tolist()) == list(range(12))
        for position, name in enumerate(ppo.MINIBATCH_STATS):
            if name in actor_learners.APPO_STATS:
                by_hand = np.mean([float(result.numpy()[size + position]) for _, result in calls])
                assert stats[name] == pytest.approx(by_hand, rel=1e-6)
        assert stats['updates'] == 6 and store.updates == 6
        np.testing.assert_array_equal(async_learners.flat_values(variables), store.parameters)
    finally:
        store.close()
