"""GA3C's batches padded to buckets: the sizes, the padding, the update on a padded batch equal to
the one on the batch alone, and the server's prediction and training paths seeing bucket shapes
only."""
import queue
import threading

import numpy as np
import pytest

import common  # noqa: F401

from common.envs import gym as gym_envs
from common.learners import losses
from common.system import errors
from ga3c_tf import buckets
from ga3c_tf import config as config_lib
from ga3c_tf import learner as learner_lib
from ga3c_tf import server as server_lib
from ga3c_tf import trainer


def _config(**overrides):
    values = dict(env_config=gym_envs.GymConfig('CartPole-v1'), network='mlp',
                  torso_kwargs={'hidden_sizes': (16,)}, num_agents=1, num_predictors=1,
                  num_trainers=1, max_agents=4, dynamic_settings=False, learning_rate=0.01,
                  total_steps=10_000, seed=3)
    values.update(overrides)
    config = config_lib.GA3CConfig(**values)
    config.validate()
    return config


def _sequences(lengths, seed=0):
    """An experience batch of sequences of lengths (the last bootstrapped from 0, a terminal)."""
    rng = np.random.default_rng(seed)
    size = sum(lengths)
    ends = np.concatenate([np.eye(length, dtype=np.float32)[-1] for length in lengths])
    end_values = np.where(ends > 0, rng.normal(size=size) * 3, 0).astype(np.float32)
    end_values[-1] = 0.0
    return (rng.normal(size=(size, 4)).astype(np.float32),
            rng.integers(0, 2, size).astype(np.int32), rng.normal(size=size).astype(np.float32),
            ends, end_values, np.arange(size, dtype=np.int64))


def test_bucket_sizes_are_powers_of_two_then_the_largest():
    assert buckets.bucket_sizes(128) == (1, 2, 4, 8, 16, 32, 64, 128)
    assert buckets.bucket_sizes(36) == (1, 2, 4, 8, 16, 32, 36)
    assert buckets.bucket_sizes(1) == (1,)
    assert [buckets.bucket_of(rows, (1, 2, 4, 5)) for rows in range(1, 6)] == [1, 2, 4, 4, 5]
    with pytest.raises(ValueError, match='a batch of 6 rows; the buckets hold at most 5'):
        buckets.bucket_of(6, (1, 2, 4, 5))
    with pytest.raises(ValueError, match='largest=0'):
        buckets.bucket_sizes(0)
    # Items of at most horizon = 5 merged while fewer than 32 rows: 31 + 5.
    assert buckets.largest_training_batch(32, 5) == 36
    assert buckets.largest_training_batch(0, 5) == 5  # one item per batch


def test_a_padded_batch_holds_the_real_rows_then_one_step_sequences():
    batch = _sequences((5, 2, 3))
    padded = buckets.pad_sequences(batch, buckets.bucket_sizes(36))
    assert len(padded) == 7 and int(padded[-1]) == 10
    assert all(len(field) == 16 for field in padded[:6])
    for field, original in zip(padded, batch):
        np.testing.assert_array_equal(field[:10], original)
    np.testing.assert_array_equal(padded[0][10:], 0)
    np.testing.assert_array_equal(padded[3][10:], 1)  # each padding row its own sequence
    returns = losses.sequence_returns(*padded[2:5], 0.99).numpy()
    np.testing.assert_array_equal(returns[:10],
                                  losses.sequence_returns(*batch[2:5], 0.99).numpy())
    np.testing.assert_array_equal(returns[10:], 0)


@pytest.mark.slow
@pytest.mark.parametrize('reduction', ['sum', 'mean'])
def test_an_update_on_a_padded_batch_is_the_update_on_its_real_rows(reduction):
    """Padding rows weigh 0: the weights after one update on the batch padded from 10 to 16
    rows are those after the update on the 10 rows (to float rounding), and so are the loss
    statistics; the padded function traces once for every bucket."""
    config = _config(loss_reduction=reduction)
    batch = _sequences((5, 2, 3))
    plain = learner_lib.build_learner(config)
    padded = learner_lib.build_learner(config)
    for got, want in zip(padded.model.trainable_variables, plain.model.trainable_variables):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    plain_stats = plain.train_on_sequences(*batch[:5])
    padded_batch = buckets.pad_sequences(batch, buckets.bucket_sizes(36))
    stats = padded.train_on_padded_sequences(*padded_batch[:5], padded_batch[6])
    for got, want in zip(padded.model.trainable_variables, plain.model.trainable_variables):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(padded.model.trainable_variables[0].numpy(),
                           learner_lib.build_learner(config).model.trainable_variables[0].numpy())
    for name in ('loss', 'policy_loss', 'value_loss', 'entropy', 'grad_norm'):
        assert float(stats[name]) == pytest.approx(float(plain_stats[name]), rel=1e-5)
    other = buckets.pad_sequences(_sequences((5, 5, 5, 5, 5, 5, 4), seed=1),
                                  buckets.bucket_sizes(36))
    padded.train_on_padded_sequences(*other[:5], other[6])
    assert padded.train_on_padded_sequences.experimental_get_tracing_count() == 1


def test_the_batcher_pads_to_buckets_and_counts_the_real_samples():
    experiences = queue.Queue()
    for length in (5, 5, 5, 1):
        experiences.put(_sequences((length,)))
    sizes = buckets.bucket_sizes(buckets.largest_training_batch(6, 5))
    assert sizes == (1, 2, 4, 8, 10)
    batcher = trainer.ExperienceBatcher(
        experiences, 6, 0.01, pad=lambda batch: buckets.pad_sequences(batch, sizes))
    first, second = (batcher.next_batch(threading.Event()) for _ in range(2))
    assert [len(first[0]), batcher.samples(first)] == [10, 10]   # 5 + 5 rows: bucket 10
    assert [len(second[0]), batcher.samples(second)] == [8, 6]   # 5 + 1 rows: bucket 8
    plain = trainer.ExperienceBatcher(queue.Queue(), 0, 0.01)
    assert plain.samples(_sequences((3,))) == 3


def test_auto_pads_where_tensorflow_sees_a_gpu_or_with_xla(monkeypatch):
    assert learner_lib.pads_batches(_config(pad_batches='always'))
    assert not learner_lib.pads_batches(_config(pad_batches='never'))
    assert not learner_lib.pads_batches(_config())  # 'auto' on this CPU-only machine
    assert learner_lib.pads_batches(_config(jit_compile=True))  # XLA compiles per shape
    assert not learner_lib.pads_batches(_config(pad_batches='never', jit_compile=True))
    monkeypatch.setattr(learner_lib.tf.config, 'list_physical_devices',
                        lambda kind=None: ['GPU:0'] if kind == 'GPU' else [])
    assert learner_lib.pads_batches(_config())
    with pytest.raises(errors.ConfigError, match="pad_batches='sometimes'"):
        _config(pad_batches='sometimes')


def test_predictions_are_made_on_bucket_shapes_and_handed_back_without_the_padding():
    config = _config(pad_batches='always', prediction_batch_size=6)
    learner = learner_lib.build_learner(config)
    with server_lib.GA3CServer(config, learner) as server:
        server.observations[:] = np.arange(16, dtype=np.float32).reshape(4, 4)
        keys = [(7 << 16) | 2, (9 << 16) | 0, (8 << 16) | 3]  # generation << 16 | slot
        batch = server._gather(keys)
        assert batch.shape == (4, 4)  # 3 requests: bucket 4 of (1, 2, 4, 6)
        np.testing.assert_array_equal(batch[:3], server.observations[[2, 0, 3]])
        np.testing.assert_array_equal(batch[3], 0)
        delivered = []
        server.replies.deliver = lambda *args: delivered.append(args)
        outputs = server._predict(batch)
        server._deliver(keys, outputs)
        (slots, generations, replies), = delivered
        assert list(slots) == [2, 0, 3] and list(generations) == [7, 9, 8]
        probabilities, values = learner.predict(server.observations[[2, 0, 3]])
        np.testing.assert_allclose(replies[:, 1], values.numpy(), rtol=1e-6)
        np.testing.assert_allclose(replies[:, 2:], probabilities.numpy(), rtol=1e-6)
        assert server._gather(keys[:1]).shape == (1, 4)
        with pytest.raises(ValueError, match='a batch of 7 rows'):
            server._gather(keys * 2 + keys[:1])


@pytest.mark.slow
@pytest.mark.parametrize('trainer_input', ['direct', 'tf_data'])
def test_a_padded_server_trains_on_bucket_shapes(monkeypatch, trainer_input, process_tree):
    """An agent's experience through the padding batcher and the padded update: every update
    is on a bucket's shape, the samples counted are the real ones."""
    config = _config(pad_batches='always', training_min_batch_size=7, horizon=5,
                     trainer_input=trainer_input)
    learner = learner_lib.build_learner(config)
    shapes, counted = [], []
    train = learner.train_on_padded_sequences

    def record(observations, actions, rewards, sequence_ends, end_values, num_valid):
        shapes.append(int(observations.shape[0]))
        counted.append(int(num_valid))
        return train(observations, actions, rewards, sequence_ends, end_values, num_valid)

    monkeypatch.setattr(learner, 'train_on_padded_sequences', record)
    with server_lib.GA3CServer(config, learner, seed=5) as server:
        server.apply((1, 1, 1))
        assert process_tree.wait_for(lambda: server.counts()['updates'] >= 3, 60)
        server.check_threads()
        counts = server.counts()
    assert set(shapes) <= set(buckets.bucket_sizes(11)) and len(shapes) >= 3
    assert all(7 <= count <= 11 for count in counted)
    assert counts['samples'] == sum(counted[:counts['updates']])
    assert learner.predict.experimental_get_tracing_count() == 1
    assert train.experimental_get_tracing_count() == 1
