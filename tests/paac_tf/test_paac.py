"""PAAC: the learner's tf.functions, the master loop, and learning on CartPole."""
import json

import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf

from common import evaluate
from common.envs import gym as gym_envs
from common.envs import pools
from common.launch import app
from common.launch import config as config_lib
from common.learners import actor_critic
from common.system import errors
from common.units import on_policy
from common.units import samplers
from paac_tf import paac


def _cartpole_config(**overrides):
    values = dict(env_config=gym_envs.GymConfig('CartPole-v1'), num_envs=4, num_workers=1,
                  horizon=5, total_steps=10_000, network='mlp', learning_rate=0.01,
                  clip_norm=40.0, seed=3)
    values.update(overrides)
    config = paac.PAACConfig(**values)
    config.validate()
    return config


def test_act_returns_one_valid_action_per_environment():
    config = _cartpole_config()
    learner = paac.build_learner(config)
    observations = np.zeros((7, 4), np.float32)
    actions = learner.act(observations).numpy()
    assert actions.shape == (7,) and actions.dtype == np.int32
    assert set(actions) <= {0, 1}
    assert learner.greedy_act(observations).numpy().shape == (7,)


def test_sampled_actions_follow_the_policy():
    logits = tf.constant([[0.0, np.log(3.0)]] * 20000)
    actions = actor_critic.sample_actions(logits, tf.random.Generator.from_seed(0)).numpy()
    assert abs(actions.mean() - 0.75) < 0.01


def test_train_step_anneals_learning_rate_and_changes_weights():
    config = _cartpole_config(total_steps=4 * 5 * 4, learning_rate=0.01)
    learner = paac.build_learner(config)
    before = [variable.numpy().copy() for variable in learner.model.trainable_variables]
    rng = np.random.default_rng(0)
    observations = rng.normal(size=(6, 4, 4)).astype(np.float32)
    actions = rng.integers(0, 2, size=(5, 4)).astype(np.int32)
    rewards = np.ones((5, 4), np.float32)
    terminals = np.zeros((5, 4), np.float32)
    rates = []
    for update in range(4):  # the loop tells the schedule the env steps before each update
        learner.set_env_steps(update * config.steps_per_update)
        rates.append(float(learner.train_on_rollout(observations, actions, rewards, terminals)
                           ['learning_rate'].numpy()))
    np.testing.assert_allclose(rates, [0.01, 0.0075, 0.005, 0.0025], rtol=1e-5)
    after = learner.model.trainable_variables
    assert any(np.abs(b - a.numpy()).max() > 0 for b, a in zip(before, after))
    assert learner.train_on_rollout.experimental_get_tracing_count() == 1


def test_section_5_2_learning_rate_per_environment_scales_alpha_with_ne():
    """alpha = 0.0007 * ne (section 5.2) when learning_rate_per_env is set; else learning_rate."""
    assert _cartpole_config(num_envs=8).initial_learning_rate == 0.01
    for num_envs in (4, 16):
        config = _cartpole_config(num_envs=num_envs, learning_rate_per_env=0.0007,
                                  total_steps=10 ** 9)
        learner = paac.build_learner(config)
        learner.set_env_steps(0)
        rollout = (np.zeros((6, num_envs, 4), np.float32), np.zeros((5, num_envs), np.int32),
                   np.zeros((5, num_envs), np.float32), np.zeros((5, num_envs), np.float32))
        rate = float(learner.train_on_rollout(*rollout)['learning_rate'].numpy())
        assert rate == pytest.approx(0.0007 * num_envs, rel=1e-5)
    with pytest.raises(Exception, match='learning_rate_per_env must be > 0'):
        _cartpole_config(learning_rate_per_env=0.0)


def _original_code_update(model, observations, actions, rewards, terminals, learning_rate,
                          entropy_coef, clip_norm, gamma):
    """alfredvc/paac's update written out independently of the learner: n-step returns in
    numpy, loss = 5 * (mean(-(log(pi(a) + 1e-30) * A + beta * H)) + mean(0.25 * (R - V)^2)),
    global-norm clipping, then TF1 RMSProp from mean squares of ones, epsilon 0.1 inside the
    sqrt. Returns the weights after the update."""
    horizon, num_envs = actions.shape
    _, bootstrap = model(observations[horizon])
    returns = np.zeros((horizon, num_envs), np.float32)
    running = bootstrap.numpy()
    for step in reversed(range(horizon)):
        running = rewards[step] + gamma * running * (1.0 - terminals[step])
        returns[step] = running
    flat_observations = observations[:horizon].reshape((-1,) + observations.shape[2:])
    flat_returns, flat_actions = returns.reshape(-1), actions.reshape(-1)
    variables = model.trainable_variables
    with tf.GradientTape() as tape:
        logits, values = model(flat_observations)
        probabilities = tf.nn.softmax(logits)
        log_probabilities = tf.math.log(probabilities + 1e-30)
        chosen = tf.reduce_sum(log_probabilities * tf.one_hot(flat_actions, 2), axis=-1)
        advantages = tf.stop_gradient(flat_returns - values)
        entropy = -tf.reduce_sum(probabilities * log_probabilities, axis=-1)
        actor = tf.reduce_mean(-(chosen * advantages + entropy_coef * entropy))
        critic = tf.reduce_mean(0.25 * tf.square(flat_returns - values))
        loss = 5.0 * (actor + critic)
    gradients = [g.numpy() for g in tape.gradient(loss, variables)]
    norm = np.sqrt(sum(np.sum(g.astype(np.float64) ** 2) for g in gradients))
    scale = min(1.0, clip_norm / norm)
    updated = []
    for variable, gradient in zip(variables, gradients):
        gradient = gradient * scale
        mean_square = 0.99 * 1.0 + 0.01 * gradient ** 2
        updated.append(variable.numpy() - learning_rate * gradient / np.sqrt(mean_square + 0.1))
    return updated, norm


@pytest.mark.parametrize('clip_norm', [40.0, 0.05])
def test_one_update_moves_the_weights_as_the_original_codes_update_does(clip_norm):
    """The cause of the flat Pong curves (issue: no paper learned Atari): the printed means
    (loss scale 1, critic coefficient 1) gave the policy 5x smaller steps than the code that
    produced the paper's scores. The defaults must reproduce that code's update exactly."""
    config = _cartpole_config(num_envs=3, horizon=4, learning_rate=0.05, entropy_coef=0.02,
                              gamma=0.9, clip_norm=clip_norm, total_steps=10**9)
    learner = paac.build_learner(config)
    rng = np.random.default_rng(7)
    observations = rng.normal(size=(5, 3, 4)).astype(np.float32)
    actions = rng.integers(0, 2, size=(4, 3)).astype(np.int32)
    rewards = rng.normal(size=(4, 3)).astype(np.float32)
    terminals = np.zeros((4, 3), np.float32)
    terminals[1, 0] = terminals[3, 2] = 1.0
    expected, norm = _original_code_update(learner.model, observations, actions, rewards,
                                           terminals, 0.05, 0.02, clip_norm, 0.9)
    assert (norm > clip_norm) == (clip_norm < 1.0)  # both branches of the clipping
    stats = learner.train_on_rollout(observations, actions, rewards, terminals)
    np.testing.assert_allclose(float(stats['grad_norm']), norm, rtol=1e-4)
    for variable, weights in zip(learner.model.trainable_variables, expected):
        np.testing.assert_allclose(variable.numpy(), weights, rtol=1e-4, atol=1e-6)


def test_metrics_rows_hold_the_mean_of_the_interval_updates():
    config = _cartpole_config(total_steps=10**9)
    learner = paac.build_learner(config)
    rng = np.random.default_rng(1)
    norms = []
    for _ in range(3):
        observations = rng.normal(size=(6, 4, 4)).astype(np.float32)
        actions = rng.integers(0, 2, size=(5, 4)).astype(np.int32)
        stats = learner.train_on_rollout(observations, actions, rng.normal(size=(5, 4)).astype(
            np.float32), np.zeros((5, 4), np.float32))
        norms.append(float(stats['grad_norm']))
    means = learner.update_means.take()
    assert means['grad_norm'] == pytest.approx(np.mean(norms), rel=1e-5)
    assert set(means) == set(actor_critic.UPDATE_STATS)
    assert learner.update_means.take()['loss'] is None  # reset: no update since


def test_iterate_collects_a_rollout_updates_once_and_carries_the_last_observation():
    config = _cartpole_config()
    learner = paac.build_learner(config)
    with pools.SerialPool(config.env_config, config.num_envs, seed=0) as pool:
        sampler = samplers.make_sampler('synchronized', pool, config.horizon)
        runner = on_policy.OnPolicyUnit(sampler, learner)
        runner.iterate()
        rollout = runner.sampler.rollout
        last = rollout.observations[-1].copy()
        assert set(np.unique(rollout.actions)) <= {0, 1}
        np.testing.assert_array_equal(rollout.rewards, 1.0)
        assert int(learner.optimizer.iterations.numpy()) == 1
        parts = runner.take_part_seconds()
        assert set(parts) == {'env', 'act', 'learn'} and all(v > 0 for v in parts.values())
        runner.iterate()  # the last observation was the first of the next rollout
        np.testing.assert_array_equal(runner.sampler.rollout.observations[0], last)


def test_invalid_values_are_named():
    with pytest.raises(errors.ConfigError, match='num_envs'):
        _cartpole_config(num_envs=0)
    with pytest.raises(errors.ConfigError, match='horizon'):
        _cartpole_config(horizon=-1)
    with pytest.raises(errors.ConfigError, match='divisible'):
        _cartpole_config(num_envs=6, num_workers=4)
    with pytest.raises(errors.ConfigError, match="'resnet'"):
        _cartpole_config(network='resnet')


@pytest.mark.slow
def test_paac_learns_cartpole(tmp_path):
    """Mean return >= 400 over 20 evaluation episodes within a fixed step budget."""
    config = _cartpole_config(num_envs=16, num_workers=1, horizon=5, total_steps=150_000,
                              learning_rate=0.1, entropy_coef=0.01, value_loss_coef=0.5,
                              clip_norm=3.0, log_every_seconds=30.0, seed=1)

    def make_serial_pool(env_config, num_envs, seed, num_workers, num_groups):
        return pools.SerialPool(env_config, num_envs, seed=seed)

    paac.train(config, str(tmp_path), make_serial_pool)
    learner = paac.build_learner(config)
    checkpoint = tf.train.Checkpoint(model=learner.model)
    checkpoint.restore(tf.train.latest_checkpoint(str(tmp_path / 'checkpoints'))).expect_partial()
    scores = evaluate.run_episodes(config.env_config, lambda obs: learner.act(obs).numpy(),
                                   num_episodes=20, seed=99)
    print(f'learning: PAAC CartPole mean {scores.mean():.1f}')
    assert scores.mean() >= 400, scores


def test_the_alternating_sampler_needs_an_even_number_of_workers():
    with pytest.raises(errors.ConfigError, match='even num_workers'):
        _cartpole_config(num_envs=6, num_workers=3, sampler='alternating')
    with pytest.raises(errors.ConfigError, match="'round_robin'"):
        _cartpole_config(sampler='round_robin')


def test_auto_workers_are_resolved_once_into_a_copy_that_records_what_was_asked(tmp_path):
    """resolve() sets num_workers 'auto' and the unset distribute in a copy; validate() changes
    nothing and refuses an unresolved 'auto'; run.json's session records asked and resolved."""
    asked = paac.PAACConfig(env_config=gym_envs.GymConfig('CartPole-v1'), num_envs=6,
                            num_workers='auto', horizon=5, total_steps=1000, network='mlp')
    with pytest.raises(errors.ConfigError, match="num_workers must be a positive integer or "
                                                 "'auto' .*got 'auto'"):
        asked.validate()
    resolved = config_lib.resolve(asked)
    assert asked.num_workers == 'auto' and asked.distribute is None and asked.asked is None
    expected = config_lib.resolve_num_workers('PAACConfig', 'auto', 6)
    assert resolved.num_workers == expected and 6 % expected == 0
    assert resolved.distribute == config_lib.DistributeConfig()
    assert resolved.asked == {'distribute': None, 'num_workers': 'auto'}
    resolved.validate()
    assert resolved.num_workers == expected  # validating again changes nothing
    record = config_lib.resolved_record(resolved)
    assert record == {
        'PAACConfig.distribute': {'asked': None,
                                  'resolved': {'strategy': 'none', 'num_replicas': 1}},
        'PAACConfig.num_workers': {'asked': 'auto', 'resolved': expected}}
    run_dir = str(tmp_path / 'run')
    app.prepare_run_dir(run_dir, {'paper': 'paac'}, {'paper': 'paac'}, record)
    app.prepare_run_dir(run_dir, {'paper': 'paac'}, {'paper': 'paac'})
    with open(f'{run_dir}/{app.RUN_FILE}') as f:
        sessions = json.load(f)['sessions']
    assert sessions[0]['resolved'] == record and 'resolved' not in sessions[1]
    fixed = config_lib.resolve(paac.PAACConfig(**dict(vars(asked), num_workers=2)))
    assert fixed.asked == {'distribute': None} and fixed.num_workers == 2


@pytest.mark.slow
def test_an_overlapped_run_saves_after_its_last_update_and_refuses_several_devices(tmp_path):
    """overlap_learning: the final checkpoint holds every update (none left in flight)."""
    config = _cartpole_config(total_steps=400, overlap_learning=True)

    def make_serial_pool(env_config, num_envs, seed, num_workers, num_groups):
        return pools.SerialPool(env_config, num_envs, seed=seed)

    paac.train(config, str(tmp_path), make_serial_pool)
    learner = paac.build_learner(config)
    checkpoint = tf.train.Checkpoint(model=learner.model, optimizer=learner.optimizer)
    checkpoint.restore(tf.train.latest_checkpoint(str(tmp_path / 'checkpoints'))).expect_partial()
    assert int(learner.optimizer.iterations.numpy()) == 400 // (4 * 5)
    with pytest.raises(errors.ConfigError, match=r"overlap_learning=True needs one device; got "
                                                 r"DistributeConfig.strategy='mirrored'"):
        _cartpole_config(overlap_learning=True, num_workers=2,
                         distribute=config_lib.DistributeConfig(strategy='mirrored',
                                                                num_replicas=2))


@pytest.mark.slow
@pytest.mark.parametrize('compute_dtype', ['float32', 'bfloat16'])
def test_reusing_the_acting_pass_trains_as_the_plain_unit(compute_dtype):
    """PAACConfig.reuse_activations: side by side with the plain unit from the same seeds (both
    with the torso in compute_dtype), the same actions in every rollout and the same weights
    after each of 12 updates (to float rounding, which RMSProp's small denominators grow over
    many more)."""
    units = []
    for reuse in (False, True):
        config = _cartpole_config(reuse_activations=reuse, learning_rate=0.05,
                                  compute_dtype=compute_dtype)
        pool = pools.SerialPool(config.env_config, config.num_envs, seed=3)
        units.append(on_policy.OnPolicyUnit(
            samplers.make_sampler('synchronized', pool, config.horizon),
            paac.build_learner(config)))
    plain, reused = units
    assert (plain.reuse, reused.reuse) == (False, True)
    try:
        for _ in range(12):
            for unit in units:
                unit.iterate()
            np.testing.assert_array_equal(reused.sampler.rollout.actions,
                                          plain.sampler.rollout.actions)
            assert not reused.kept  # taken by the update
            for first, second in zip(plain.learner.model.get_weights(),
                                     reused.learner.model.get_weights()):
                np.testing.assert_allclose(second, first, rtol=1e-5, atol=1e-6)
    finally:
        for unit in units:
            unit.sampler.pool.close()


@pytest.mark.parametrize('overrides, named', [
    ({'sampler': 'alternating', 'num_workers': 2}, "sampler='alternating'"),
    ({'overlap_learning': True}, 'overlap_learning=True'),
    ({'jit_compile': True}, 'jit_compile=True'),
    ({'distribute': config_lib.DistributeConfig(strategy='mirrored', num_replicas=2),
      'num_workers': 2}, "DistributeConfig.strategy='mirrored'"),
])
def test_reusing_the_acting_pass_is_refused_where_the_update_cannot_take_it(overrides, named):
    with pytest.raises(errors.ConfigError, match=f'reuse_activations=True cannot run with {named}'):
        _cartpole_config(reuse_activations=True, **overrides)


@pytest.mark.parametrize('kind, says', [
    (None, 'PAAC: 4 environments over 1 worker processes, synchronized sampler, learning rate '
           '0.01\n'),
    ('ale_vector', "PAAC: 4 environments in a pool of kind 'ale_vector', synchronized sampler, "
                   'learning rate 0.01, the acting pass reused\n')])
def test_the_start_line_says_what_steps_the_environments(tmp_path, capsys, kind, says):
    import gin  # pylint: disable=import-outside-toplevel
    if kind is not None:
        gin.bind_parameter('make_pool.kind', kind)
    config = _cartpole_config(total_steps=20, reuse_activations=kind is not None)
    paac.train(config, str(tmp_path), lambda env_config, num_envs, seed, num_workers, num_groups:
               pools.SerialPool(env_config, num_envs, seed=seed))
    assert says in capsys.readouterr().out


def test_the_fast_pong_preset_is_the_paper_preset_on_faster_machinery():
    """gin/paac/pong_fast.gin changes no value of the paper: every PAACConfig field is
    pong.gin's but reuse_activations, and only the pool's kind is bound besides."""
    import dataclasses  # pylint: disable=import-outside-toplevel
    import gin  # pylint: disable=import-outside-toplevel
    from paac_tf import main as paac_main  # pylint: disable=import-outside-toplevel
    root = app.PROJECT_ROOT
    configs, kinds = [], []
    for preset in ('pong.gin', 'pong_fast.gin'):
        gin.clear_config()
        configs.append(dataclasses.asdict(paac_main.configure(
            [f'{root}/gin/paac/{preset}'], [])))
        kinds.append(pools.configured_kind())
    gin.clear_config()
    paper, fast = configs
    assert {name for name in paper if paper[name] != fast[name]} == {'reuse_activations'}
    assert (paper['reuse_activations'], fast['reuse_activations']) == (False, True)
    assert kinds == ['process', 'ale_vector']
