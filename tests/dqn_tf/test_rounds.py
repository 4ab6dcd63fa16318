"""RoundGate: every actor steps once a round (chained: in order) and the main thread waits."""
import threading

import pytest

from dqn_tf import rounds


def _start_actors(gate, num_actors, step):
    """Threads running the actor loop of dqn.Actor.run around step(index)."""

    def loop(index):
        while gate.wait_for_round(index):
            try:
                step(index)
            except Exception:  # pylint: disable=broad-except
                errors.append((f'actor-{index}', RuntimeError(f'actor {index} failed')))
                gate.finish(index, failed=True)
                return
            gate.finish(index)

    errors = []
    threads = [threading.Thread(target=loop, args=(index,)) for index in range(num_actors)]
    for thread in threads:
        thread.start()
    return threads, errors


@pytest.mark.parametrize('chained', [True, False])
def test_each_round_steps_every_actor_once_before_returning(chained):
    steps = []
    gate = rounds.RoundGate(4, order="chained" if chained else "broadcast")
    threads, errors = _start_actors(gate, 4, steps.append)
    try:
        for round_index in range(3):
            gate.run_round(threads, lambda: errors)
            assert len(steps) == 4 * (round_index + 1)
            this_round = steps[-4:]
            assert this_round == [0, 1, 2, 3] if chained else sorted(this_round) == [0, 1, 2, 3]
    finally:
        gate.close()
        for thread in threads:
            thread.join(timeout=5)
    assert not any(thread.is_alive() for thread in threads)


@pytest.mark.parametrize('chained', [True, False])
def test_a_failing_actor_ends_the_round_and_names_itself(chained):
    steps = []
    first_round_done = threading.Event()

    def step(index):
        if index == 2 and first_round_done.is_set():
            raise ValueError('emulator crashed')
        steps.append(index)

    gate = rounds.RoundGate(4, order="chained" if chained else "broadcast")
    threads, errors = _start_actors(gate, 4, step)
    try:
        gate.run_round(threads, lambda: errors)
        first_round_done.set()
        with pytest.raises(rounds.ActorFailed, match='actor-2 failed'):
            gate.run_round(threads, lambda: errors)
        if chained:  # actor 3 did not take the failed round's step
            assert steps == [0, 1, 2, 3, 0, 1]
        else:
            assert sorted(steps[4:]) == [0, 1, 3]
    finally:
        gate.close()
        for thread in threads:
            thread.join(timeout=5)
    assert not any(thread.is_alive() for thread in threads)


def test_led_rounds_start_the_others_only_once_actor_0_has_the_actions():
    steps = []
    gate = rounds.RoundGate(4, order='led')
    lead_done = gate.lead_done

    def step(index):
        steps.append(index)
        if index == 0:
            assert steps[-1] == 0 and len(steps) % 4 == 1  # nobody else started this round
            lead_done()

    threads, errors = _start_actors(gate, 4, step)
    try:
        for round_index in range(3):
            gate.run_round(threads, lambda: errors)
            this_round = steps[4 * round_index:]
            assert this_round[0] == 0 and sorted(this_round) == [0, 1, 2, 3]
    finally:
        gate.close()
        for thread in threads:
            thread.join(timeout=5)
    assert not any(thread.is_alive() for thread in threads)


def test_a_failing_leader_ends_the_round_before_the_others_step():
    steps = []

    def step(index):
        if index == 0:
            raise ValueError('inference failed')
        steps.append(index)

    gate = rounds.RoundGate(3, order='led')
    threads, errors = _start_actors(gate, 3, step)
    try:
        with pytest.raises(rounds.ActorFailed, match='actor-0 failed'):
            gate.run_round(threads, lambda: errors)
        assert steps == []
    finally:
        gate.close()
        for thread in threads:
            thread.join(timeout=5)
    assert not any(thread.is_alive() for thread in threads)


def test_an_unknown_order_is_named():
    with pytest.raises(ValueError, match="order='random'; allowed: chained, broadcast, led"):
        rounds.RoundGate(2, order='random')
