"""The bench's Q-value rows at the presets' own batch of 32 (accel/dqn_32, accel/cat_dqn_32):
several updates of 32 per phase in one train_steps call, at training intensity 8."""
import gin
import numpy as np
import pytest


@pytest.mark.slow
@pytest.mark.parametrize('row, categorical', [('accel/dqn_32', False),
                                              ('accel/cat_dqn_32', True)])
def test_batch_32_rows_train_stacks_of_32_at_intensity_8(monkeypatch, row, categorical):
    from accel_tf import bench_rows
    made, stacks = [], []
    real_make_phases = bench_rows.q_family.make_phases

    def remember(config, sampler, learner, *args, **kwargs):
        train_steps = learner.train_steps

        def recording(*stack):
            stacks.append(np.shape(stack[1]))
            return train_steps(*stack)

        learner.train_steps = recording
        manager = real_make_phases(config, sampler, learner, *args, **kwargs)
        made.append((manager, learner))
        return manager

    monkeypatch.setattr(bench_rows.q_family, 'make_phases', remember)
    settings = {'seconds': 0.5, 'warmup_seconds': 0.0, 'num_envs': 8, 'game': 'pong',
                'num_workers': 2}
    gin.clear_config()
    assert bench_rows.ROWS[row](settings)['steps_per_sec'] > 0
    (phases, learner), = made
    # 8 simulators x horizon 1 = 8 steps a phase, 2 updates of 32: 64 trained per 8 sampled.
    assert phases.settings.batch_size == 32 and phases.settings.updates_per_phase == 2
    assert stacks and set(stacks) == {(2, 32)}
    assert learner.settings.categorical == categorical
    assert int(learner.optimizer.iterations.numpy()) == 2 * len(stacks)
