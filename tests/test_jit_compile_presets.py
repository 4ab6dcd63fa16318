"""RunConfig.jit_compile and compute_dtype reach the learner of every paper's Pong preset: with
jit_compile on, acting and updating call the network through XLA (common/learners/xla.py); off
(every preset's default, the faster on a CPU), they do not. With compute_dtype 'bfloat16' the
network's torso computes in bfloat16 (every preset's default: float32)."""
import os

import pytest
import tf_keras as keras

from common.launch import app

# Preset -> its config's name in gin, and the update function to look into.
PRESETS = {'paac/pong': ('PAACConfig', 'train_on_rollout'),
           'dqn/pong': ('DQNConfig', 'train_step'),
           'ga3c/pong': ('GA3CConfig', 'train_on_sequences'),
           'accel/ppo_pong': ('AccelConfig', 'train_on_rollout'),
           'accel/rainbow_pong': ('AccelConfig', 'weighted_train_step')}


def _learner(preset, field, value):
    owner, _ = PRESETS[preset]
    gin_file = os.path.join(app.PROJECT_ROOT, 'gin', preset + '.gin')
    bindings = [f'{owner}.{field} = {value!r}']
    paper = preset.split('/')[0]
    # pylint: disable=import-outside-toplevel
    if paper == 'paac':
        from paac_tf import main, paac
        return paac.build_learner(main.configure([gin_file], bindings))
    if paper == 'dqn':
        from dqn_tf import dqn, main
        return dqn.build_learner(main.configure([gin_file], bindings))
    if paper == 'ga3c':
        from ga3c_tf import learner, main
        return learner.build_learner(main.configure([gin_file], bindings))
    from accel_tf import kinds, main
    return kinds.build_learner(main.configure([gin_file], bindings))


@pytest.mark.slow
@pytest.mark.parametrize('preset', sorted(PRESETS))
def test_jit_compile_reaches_every_papers_learner(preset, xla_compiled_calls):
    for jit_compile in (False, True):
        learner = _learner(preset, 'jit_compile', jit_compile)
        act = getattr(learner, 'act', None) or learner.online_greedy
        for function in (act, getattr(learner, PRESETS[preset][1])):
            assert bool(xla_compiled_calls(function.get_concrete_function())) == jit_compile


@pytest.mark.parametrize('preset', sorted(PRESETS))
def test_compute_dtype_reaches_every_papers_network(preset):
    for compute_dtype in ('float32', 'bfloat16'):
        learner = _learner(preset, 'compute_dtype', compute_dtype)
        model = getattr(learner, 'model', None) or learner.online
        dtypes = {layer.compute_dtype for layer in model.torso.submodules
                  if isinstance(layer, (keras.layers.Conv2D, keras.layers.Dense))}
        assert dtypes == {compute_dtype}, (preset, dtypes)
