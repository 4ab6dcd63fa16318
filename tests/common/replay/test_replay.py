"""Replay memory: frames stored once, stacks across episode boundaries, valid sampling, size."""
import os

import numpy as np
import pytest

from common.replay import replay
from common.replay import staging as staging_lib


def _observation(value, shape=(3, 2, 4)):
    """A stacked observation whose newest frame is filled with value (older frames are noise)."""
    observation = np.full(shape, 255, np.uint8)
    observation[..., -1] = value
    return observation


def _fill(memory, stream, values, starts, terminals=None):
    for index, value in enumerate(values):
        terminal = bool(terminals[index]) if terminals is not None else False
        memory.add(stream, _observation(value), action=index, reward=float(value),
                   terminal=terminal, episode_start=bool(starts[index]))


def _newest_to_oldest(stacked_observation):
    """The frame values of one stacked (H, W, stack) observation, oldest first."""
    return [int(stacked_observation[0, 0, age]) for age in range(stacked_observation.shape[-1])]


def test_stacks_are_rebuilt_from_single_frames_with_zero_padding_at_episode_starts():
    memory = replay.ReplayMemory(20, (3, 2, 4), np.uint8, stack=4)
    # Episode A: steps 0-4 (values 1-5, terminal at 4); episode B starts at step 5.
    starts = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0]
    terminals = [0, 0, 0, 0, 1, 0, 0, 0, 0, 0]
    _fill(memory, 0, range(1, 11), starts, terminals)
    stack = lambda position: _newest_to_oldest(  # noqa: E731
        memory.stacked(np.array([0]), np.array([position]))[0])
    assert stack(0) == [0, 0, 0, 1]
    assert stack(2) == [0, 1, 2, 3]
    assert stack(4) == [2, 3, 4, 5]
    assert stack(5) == [0, 0, 0, 6]    # episode B never sees episode A's frames
    assert stack(7) == [0, 6, 7, 8]
    assert stack(9) == [7, 8, 9, 10]


def test_sampled_transitions_hold_consecutive_steps_of_one_stream():
    memory = replay.ReplayMemory(2 * 40, (3, 2, 4), np.uint8, stack=4, num_streams=2, seed=1)
    rng = np.random.default_rng(0)
    for stream, offset in ((0, 0), (1, 100)):
        starts = rng.random(90) < 0.15
        starts[0] = True
        # Frame value = offset + step (mod 100) + 1: it names the stream and the step.
        _fill(memory, stream, [offset + step % 100 + 1 for step in range(90)], starts)
    batch = memory.sample(500)
    for observation, next_observation, reward in zip(batch.observations,
                                                     batch.next_observations, batch.rewards):
        frames = _newest_to_oldest(observation)
        assert frames[-1] == int(reward)  # the sampled step's own frame is newest
        present = [value for value in frames if value]
        assert present == list(range(present[0], present[0] + len(present)))  # one stream
        next_frames = _newest_to_oldest(next_observation)
        assert next_frames[-1] == frames[-1] + 1
        assert next_frames[:-1] == frames[1:] or next_frames[:-1] == [0, 0, 0]


def test_sample_stacked_gives_minibatches_along_a_leading_axis():
    memory = replay.ReplayMemory(50, (3, 2, 4), np.uint8, stack=4, num_streams=1, seed=2)
    starts = np.zeros(50, bool)
    starts[[0, 20]] = True
    _fill(memory, 0, [step + 1 for step in range(50)], starts)
    stacked = memory.sample_stacked(5, 7)
    assert stacked.observations.shape == (5, 7, 3, 2, 4)
    assert stacked.next_observations.shape == (5, 7, 3, 2, 4)
    assert stacked.actions.shape == stacked.rewards.shape == stacked.terminals.shape == (5, 7)
    for observations, next_observations, rewards in zip(
            stacked.observations, stacked.next_observations, stacked.rewards):
        for observation, next_observation, reward in zip(observations, next_observations, rewards):
            assert _newest_to_oldest(observation)[-1] == int(reward)
            assert _newest_to_oldest(next_observation)[-1] == int(reward) + 1


def test_sampling_never_returns_an_invalid_index():
    capacity, stack = 10, 4
    memory = replay.ReplayMemory(capacity, (3, 2, stack), np.uint8, stack=stack, seed=2)
    with pytest.raises(ValueError, match='no complete transition'):
        memory.sample(1)
    memory.add(0, _observation(1), 0, 0.0, False, True)
    with pytest.raises(ValueError, match='no complete transition'):
        memory.sample(1)  # s' of the only step is not stored yet
    for count in range(2, 35):
        memory.add(0, _observation(count), 0, 0.0, False, False)
        _, positions = memory.sample_indices(400)
        cursor = int(memory.cursors[0])
        newest = (cursor - 1) % capacity
        assert newest not in positions  # its next state is not stored
        if count < capacity:
            assert set(positions) == set(range(count - 1))
        else:
            # The oldest stack-1 steps lost their history to the wrap-around.
            overwritten = {(cursor + age) % capacity for age in range(stack - 1)}
            assert not overwritten & set(positions)
            assert len(set(positions)) == capacity - 1 - (stack - 1)


def test_n_step_transitions_sum_discounted_rewards_and_stop_at_a_terminal():
    memory = replay.ReplayMemory(40, (3, 2, 4), np.uint8, stack=4, n_step=3, gamma=0.5)
    rewards = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]
    terminals = [0, 0, 0, 1, 0, 0, 0, 0]  # step 3 ends an episode (or a life)
    for step, (reward, terminal) in enumerate(zip(rewards, terminals)):
        memory.add(0, _observation(step + 1), action=step, reward=reward,
                   terminal=bool(terminal), episode_start=step in (0, 4))
    assert memory.valid_counts()[0] == len(rewards) - 3  # s_{t+3} must be stored
    batch = memory.transitions(np.zeros(5, np.int64), np.arange(5))
    # By hand: r_t + 0.5 r_{t+1} + 0.25 r_{t+2}, cut after the terminal step 3.
    np.testing.assert_allclose(batch.rewards, [1 + 1 + 1, 2 + 2 + 2, 4 + 4, 8, 16 + 16 + 16])
    np.testing.assert_array_equal(batch.terminals, [0, 1, 1, 1, 0])
    assert [_newest_to_oldest(o)[-1] for o in batch.next_observations] == [4, 5, 6, 7, 8]
    np.testing.assert_array_equal(batch.actions, np.arange(5))


def test_one_step_transitions_are_unchanged_by_the_n_step_path():
    memory = replay.ReplayMemory(40, (3, 2, 4), np.uint8, stack=4, n_step=1, gamma=0.5)
    for step in range(6):
        memory.add(0, _observation(step + 1), step, float(step), step == 2, step == 0)
    batch = memory.transitions(np.zeros(5, np.int64), np.arange(5))
    np.testing.assert_allclose(batch.rewards, [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(batch.terminals, [0, 0, 1, 0, 0])
    assert [_newest_to_oldest(o)[-1] for o in batch.next_observations] == [2, 3, 4, 5, 6]


def test_staged_steps_flush_into_replay_as_if_added_directly():
    direct = replay.ReplayMemory(12, (3, 2, 4), np.uint8, stack=4)
    staged = replay.ReplayMemory(12, (3, 2, 4), np.uint8, stack=4)
    staging = staging_lib.StagingBuffer(5, staged.frame_shape, np.uint8)
    for step in range(15):
        observation = _observation(step + 1)
        args = (step % 3, float(step), step % 4 == 3, step % 4 == 0)
        direct.add(0, observation, *args)
        staging.add(staged.newest_frame(observation), *args)
        if staging.size == 5:
            staging.flush_into(staged, 0)
    for name in ('frames', 'actions', 'rewards', 'terminals', 'episode_starts', 'cursors',
                 'counts'):
        np.testing.assert_array_equal(getattr(direct, name), getattr(staged, name))
    with pytest.raises(ValueError, match='full'):
        for _ in range(6):
            staging.add(np.zeros(staged.frame_shape, np.uint8), 0, 0.0, False, False)


def test_vector_observations_are_stored_whole_with_stack_one():
    memory = replay.ReplayMemory(8, (4,), np.float32, stack=1)
    for step in range(5):
        memory.add(0, np.full(4, step, np.float32), step, 1.0, step == 4, step == 0)
    batch = memory.sample(50)
    np.testing.assert_array_equal(batch.observations[:, 0], batch.actions)
    np.testing.assert_array_equal(batch.next_observations[:, 0], batch.actions + 1)
    assert batch.observations.shape == (50, 4)


def test_memory_footprint_stores_each_frame_once():
    shape = (84, 84, 4)
    memory = replay.ReplayMemory(1000, shape, np.uint8, stack=4, num_streams=8)
    assert memory.nbytes == replay.footprint_bytes(1000, shape, np.uint8, stack=4)
    # One 84x84 frame plus 10 bytes of step data per step: not 4x (stacks), not 8x (next state).
    assert memory.nbytes == 1000 * (84 * 84 + 10)
    full_size = replay.footprint_bytes(1_000_000, shape, np.uint8, stack=4)
    assert full_size == 7_066_000_000 and full_size < 10e9


def test_bad_sizes_are_named():
    with pytest.raises(ValueError, match='capacity=6'):
        replay.ReplayMemory(6, (3, 2, 4), np.uint8, stack=4, num_streams=2)
    with pytest.raises(ValueError, match='stack size 4'):
        replay.ReplayMemory(60, (3, 2, 3), np.uint8, stack=4)
    with pytest.raises(ValueError, match='need at least stack \\+ n_step = 7'):
        replay.ReplayMemory(6, (3, 2, 4), np.uint8, stack=4, n_step=3)
    with pytest.raises(ValueError, match='n_step=0'):
        replay.ReplayMemory(60, (3, 2, 4), np.uint8, stack=4, n_step=0)


def _resident_megabytes():
    with open('/proc/self/status') as status:
        for line in status:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024
    raise AssertionError('no VmRSS line')


@pytest.mark.skipif(not os.path.exists('/proc/self/status'), reason='needs Linux /proc')
def test_prefault_takes_the_replays_memory_at_creation():
    """200k 84x84 frames: about 1.3 GB resident at once with prefault, next to none without."""
    before = _resident_megabytes()
    lazy = replay.ReplayMemory(200_000, (84, 84, 4), np.uint8, stack=4)
    lazy_growth = _resident_megabytes() - before
    del lazy
    before = _resident_megabytes()
    eager = replay.ReplayMemory(200_000, (84, 84, 4), np.uint8, stack=4, prefault=True)
    eager_growth = _resident_megabytes() - before
    assert lazy_growth < 50
    assert eager_growth > 0.95 * eager.nbytes / 2**20
    del eager


def _stack_by_hand(memory, stream, position):
    """The (H, W, stack) observation ending at position, frame by frame from the stored ones."""
    capacity, stack = memory.stream_capacity, memory.stack
    frames = [memory.frames[stream, (position - age) % capacity] for age in range(stack)]
    starts = [memory.episode_starts[stream, (position - age) % capacity] for age in range(stack)]
    observation = np.zeros(memory.observation_shape, memory.observation_dtype)
    for age, frame in enumerate(frames):  # age 0 is the newest
        if not any(starts[:age]):         # no newer frame of the stack starts an episode
            observation[..., stack - 1 - age] = frame
    return observation


@pytest.mark.parametrize('n_step', [1, 2, 3, 4, 6])
def test_states_and_next_states_equal_stacks_built_frame_by_frame(n_step):
    """One gather serves a transition's overlapping state and next state (n_step < stack), two
    gathers the others; either way every pixel is the stored frame's, or padding."""
    memory = replay.ReplayMemory(2 * 30, (3, 2, 4), np.uint8, stack=4, num_streams=2, seed=4,
                                 n_step=n_step, gamma=0.9)
    rng = np.random.default_rng(n_step)
    for stream in range(2):  # 70 steps into 30 per stream: the streams wrap around
        for step in range(70):
            memory.add(stream, rng.integers(1, 256, (3, 2, 4), dtype=np.uint8), 0, 0.0,
                       bool(rng.random() < 0.1), bool(step == 0 or rng.random() < 0.2))
    streams, positions = memory.sample_indices(300)
    batch = memory.transitions(streams, positions)
    for index, (stream, position) in enumerate(zip(streams, positions)):
        np.testing.assert_array_equal(batch.observations[index],
                                      _stack_by_hand(memory, stream, position))
        np.testing.assert_array_equal(batch.next_observations[index], _stack_by_hand(
            memory, stream, (position + n_step) % memory.stream_capacity))
    assert batch.observations.dtype == np.uint8 and batch.observations.shape == (300, 3, 2, 4)
