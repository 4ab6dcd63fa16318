"""RunConfig.jit_compile (common/learners/xla.py): the learners' network calls run XLA-compiled,
and acting, predicting and updating give what they give without XLA, to float tolerance."""
import numpy as np
import pytest

import common  # noqa: F401
import tensorflow as tf

from common.learners import actor_critic
from common.learners import losses
from common.learners import networks
from common.learners import optim
from common.learners import q_learner
from common.learners import xla

SHAPE, ACTIONS, HORIZON, ENVS = (12, 12, 2), 3, 3, 4
TOLERANCE = dict(rtol=1e-4, atol=1e-5)


def conv_torso_kwargs():
    """The nips torso on small frames (12 -> 3 -> 2 with 'same' padding): the convolution
    kernels XLA replaces are what is compared."""
    return {'padding': 'same'}


def _actor_critic(jit_compile, gae_lambda=None):
    model = networks.make_actor_critic(ACTIONS, SHAPE, np.uint8, network='nips', seed=5,
                                       torso_kwargs=conv_torso_kwargs())
    return actor_critic.ActorCriticLearner(
        model, optim.RMSProp(0.01), actor_critic.LossSettings(
            gamma=0.99, entropy_coef=0.01, value_loss_coef=0.5, clip_norm=40.0,
            gae_lambda=gae_lambda),
        tf.TensorSpec((None,) + SHAPE, tf.uint8), seed=7, horizon=HORIZON,
        jit_compile=jit_compile)


def _rollout(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (HORIZON + 1, ENVS) + SHAPE, dtype=np.uint8),
            rng.integers(0, ACTIONS, (HORIZON, ENVS)).astype(np.int32),
            rng.normal(size=(HORIZON, ENVS)).astype(np.float32),
            (rng.random((HORIZON, ENVS)) < 0.3).astype(np.float32))


def _weights(variables):
    return [variable.numpy() for variable in variables]


def test_compiled_call_is_the_call_itself_without_jit_compile():
    def call(x):
        return x + 1
    assert xla.compiled_call(call, False) is call
    compiled = xla.compiled_call(call, True)
    assert compiled is not call and float(compiled(tf.constant(1.0))) == 2.0


@pytest.mark.parametrize('jit_compile', [False, True])
def test_actor_critic_hot_paths_call_the_network_through_xla_only_when_asked(
        jit_compile, xla_compiled_calls):
    learner = _actor_critic(jit_compile)
    for function in (learner.act, learner.greedy_act, learner.predict, learner.train_on_rollout,
                     learner.train_on_sequences):
        compiled = xla_compiled_calls(function.get_concrete_function())
        assert bool(compiled) == jit_compile, function


@pytest.mark.slow
@pytest.mark.parametrize('gae_lambda', [None, 0.95])  # n-step returns; GAE
def test_actor_critic_acts_predicts_and_trains_as_without_xla(gae_lambda):
    plain, compiled = _actor_critic(False, gae_lambda), _actor_critic(True, gae_lambda)
    rollout = _rollout()
    observations = rollout[0][0]
    # Same random draws: the Gumbel noise comes from the generator outside the compiled call.
    np.testing.assert_array_equal(plain.act(observations), compiled.act(observations))
    np.testing.assert_array_equal(plain.greedy_act(observations),
                                  compiled.greedy_act(observations))
    for mine, theirs in zip(plain.predict(observations), compiled.predict(observations)):
        np.testing.assert_allclose(mine, theirs, **TOLERANCE)
    for seed in range(3):
        rollout = _rollout(seed)
        stats = plain.train_on_rollout(*rollout), compiled.train_on_rollout(*rollout)
        np.testing.assert_allclose(float(stats[0]['loss']), float(stats[1]['loss']), **TOLERANCE)
    for mine, theirs in zip(_weights(plain.model.trainable_variables),
                            _weights(compiled.model.trainable_variables)):
        np.testing.assert_allclose(mine, theirs, **TOLERANCE)
    assert not np.allclose(_weights(plain.model.trainable_variables)[0],
                           _weights(_actor_critic(False).model.trainable_variables)[0])


def _q_learner(jit_compile, categorical=False):
    support = np.linspace(-5.0, 5.0, 11).astype(np.float32) if categorical else None

    def make_network():
        return networks.make_q_network(ACTIONS, SHAPE, np.uint8, network='nips', dueling=True,
                                       torso_kwargs=conv_torso_kwargs(), seed=5, support=support)

    return q_learner.QLearner(
        make_network, ACTIONS, q_learner.centered_rmsprop(0.01, 0.95, 0.01),
        q_learner.QSettings(gamma=0.99, double_dqn=True, categorical=categorical),
        tf.TensorSpec((None,) + SHAPE, tf.uint8), jit_compile=jit_compile)


def _minibatch(seed, batch=6, stack=None):
    rng = np.random.default_rng(seed)
    lead = (batch,) if stack is None else (stack, batch)
    return (rng.integers(0, 256, lead + SHAPE, dtype=np.uint8),
            rng.integers(0, ACTIONS, lead).astype(np.int32),
            rng.normal(size=lead).astype(np.float32),
            rng.integers(0, 256, lead + SHAPE, dtype=np.uint8),
            (rng.random(lead) < 0.3).astype(np.float32))


@pytest.mark.slow
@pytest.mark.parametrize('categorical', [False, True])
def test_q_learner_acts_and_trains_as_without_xla(categorical, xla_compiled_calls):
    plain, compiled = _q_learner(False, categorical), _q_learner(True, categorical)
    assert xla_compiled_calls(compiled.train_step.get_concrete_function())
    assert not xla_compiled_calls(plain.train_step.get_concrete_function())
    observations = _minibatch(0)[0]
    np.testing.assert_array_equal(plain.online_greedy(observations),
                                  compiled.online_greedy(observations))
    for seed in range(2):
        np.testing.assert_allclose(plain.train_step(*_minibatch(seed)),
                                   compiled.train_step(*_minibatch(seed)), **TOLERANCE)
    stack = _minibatch(5, stack=2)
    np.testing.assert_allclose(plain.train_steps(*stack), compiled.train_steps(*stack),
                               **TOLERANCE)
    for mine, theirs in zip(_weights(plain.online.trainable_variables),
                            _weights(compiled.online.trainable_variables)):
        np.testing.assert_allclose(mine, theirs, **TOLERANCE)


def test_compiled_scans_of_returns_and_advantages_are_the_plain_ones():
    rng = np.random.default_rng(3)
    rewards = rng.normal(size=(6, 4)).astype(np.float32)
    terminals = (rng.random((6, 4)) < 0.3).astype(np.float32)
    values, bootstrap = rng.normal(size=(6, 4)).astype(np.float32), np.ones(4, np.float32)
    learner = _actor_critic(True)
    np.testing.assert_allclose(
        learner.n_step_returns(rewards, terminals, bootstrap, 0.99),
        losses.n_step_returns(rewards, terminals, bootstrap, 0.99), rtol=1e-6)
    np.testing.assert_allclose(
        learner.generalized_advantage_estimation(rewards, values, terminals, bootstrap, 0.99,
                                                 0.95),
        losses.generalized_advantage_estimation(rewards, values, terminals, bootstrap, 0.99,
                                                0.95), rtol=1e-5, atol=1e-6)
    assert learner.n_step_returns is not losses.n_step_returns
    assert _actor_critic(False).n_step_returns is losses.n_step_returns
