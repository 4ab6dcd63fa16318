"""Prioritized replay: exactly the uniform replay's valid steps carry a priority, through wrap-
around and n-step; draws return those steps' transitions with weights; updates steer draws."""
import numpy as np
import pytest

from common.replay import prioritized_replay
from common.replay import replay


def _memory(capacity=2 * 12, num_streams=2, stack=3, n_step=2, seed=0):
    return replay.ReplayMemory(capacity, (2, 2, stack), np.uint8, stack=stack,
                               num_streams=num_streams, seed=seed, n_step=n_step, gamma=0.9)


def _uniform_valid_items(memory):
    """The items the uniform replay can draw: each stream's valid steps, oldest first from
    the oldest stored step plus the history a full stream lost."""
    items = set()
    for stream, valid in enumerate(memory.valid_counts()):
        full = memory.counts[stream] == memory.stream_capacity
        oldest = memory.cursors[stream] if full else 0
        first = oldest + (memory.stack - 1 if full else 0)
        items |= {stream * memory.stream_capacity + (first + offset) % memory.stream_capacity
                  for offset in range(valid)}
    return items


@pytest.mark.parametrize('n_step, stack', [(1, 1), (1, 3), (2, 3), (3, 4)])
def test_exactly_the_uniform_replays_valid_steps_carry_a_priority(n_step, stack):
    memory = _memory(n_step=n_step, stack=stack)
    prioritized = prioritized_replay.PrioritizedReplay(memory, alpha=0.6)
    rng = np.random.default_rng(n_step * 10 + stack)
    frame = np.zeros(memory.frame_shape, np.uint8)
    for _ in range(60):  # well past several wrap-arounds of both 12-step streams
        stream = int(rng.integers(2))
        if rng.random() < 0.5:
            observation = np.zeros((2, 2, stack), np.uint8)
            prioritized.add(stream, observation, 0, 1.0, bool(rng.random() < 0.1), False)
        else:
            count = int(rng.integers(1, 8))
            prioritized.add_steps(stream, np.repeat(frame[None], count, 0), np.zeros(count),
                                  np.ones(count), rng.random(count) < 0.1, np.zeros(count, bool))
        carrying = set(np.flatnonzero(prioritized.sampling.tree.get(
            np.arange(prioritized.sampling.capacity))))
        assert carrying == _uniform_valid_items(memory)


def test_a_draw_returns_the_transitions_of_its_items_with_their_weights():
    memory = _memory(capacity=40, num_streams=1, n_step=2)
    prioritized = prioritized_replay.PrioritizedReplay(memory, alpha=1.0, seed=3)
    for step in range(12):
        observation = np.full((2, 2, 3), step + 1, np.uint8)
        prioritized.add(0, observation, step, float(step), False, step == 0)
    batch, indices, weights = prioritized.sample(16, beta=0.5)
    expected = memory.transitions(np.zeros(16, np.int64), indices)
    for got, want in zip(batch, expected):
        np.testing.assert_array_equal(got, want)
    assert set(indices) <= set(range(10))  # steps 10 and 11 lack their 2 successors
    np.testing.assert_allclose(weights, 1.0)  # every new step enters at the same priority


def test_updated_priorities_steer_the_draws():
    memory = _memory(capacity=40, num_streams=1, n_step=1)
    prioritized = prioritized_replay.PrioritizedReplay(memory, alpha=1.0, seed=4)
    for step in range(6):
        prioritized.add(0, np.zeros((2, 2, 3), np.uint8), 0, 0.0, False, step == 0)
    prioritized.update_priorities(np.arange(5), [0.0, 0.0, 0.0, 0.0, 4.0])
    draws = np.concatenate([prioritized.sample(10, beta=0.4)[1] for _ in range(100)])
    assert np.mean(draws == 4) > 0.99  # 4 + 1e-6 against 1e-6 for each of the others
