"""The NP/NT/NA annealing driven by a fake TPS signal converges to the best setting."""
import numpy as np
import pytest

from ga3c_tf import dynamic

BEST = (3, 2, 6)


def fake_tps(settings):
    """A TPS that peaks at BEST and falls off with the distance from it."""
    return 1000.0 - sum(3.0 * (value - best) ** 2 for value, best in zip(settings, BEST))


def test_annealer_converges_to_the_best_setting_and_stays():
    annealer = dynamic.Annealer((1, 1, 1), maximums=(8, 8, 16), seed=0)
    settings = (1, 1, 1)
    history = []
    for _ in range(200):
        settings = annealer.step(fake_tps(settings))
        history.append(annealer.accepted)
    assert annealer.accepted == BEST
    assert history[-50:] == [BEST] * 50  # every later trial is worse and gets reverted


def test_noisy_tps_still_ends_near_the_best_setting():
    rng = np.random.default_rng(1)
    annealer = dynamic.Annealer((1, 1, 1), maximums=(8, 8, 16), seed=1)
    settings = (1, 1, 1)
    for _ in range(300):
        settings = annealer.step(fake_tps(settings) + rng.normal(0, 1.0))
    assert sum(abs(a - b) for a, b in zip(annealer.accepted, BEST)) <= 1


def test_changes_one_knob_by_one_within_bounds():
    annealer = dynamic.Annealer((1, 2, 3), minimums=(1, 1, 1), maximums=(2, 2, 3), seed=2)
    accepted = annealer.accepted
    for step in range(100):
        trial = annealer.step(float(step % 3))
        assert sum(abs(a - b) for a, b in zip(trial, annealer.accepted)) == 1
        assert all(1 <= value <= bound for value, bound in zip(trial, (2, 2, 3)))
        accepted = annealer.accepted
    assert all(1 <= value <= bound for value, bound in zip(accepted, (2, 2, 3)))


def test_fixed_bounds_keep_the_settings():
    annealer = dynamic.Annealer((2, 2, 4), minimums=(2, 2, 4), maximums=(2, 2, 4))
    assert annealer.step(10.0) == (2, 2, 4)


def test_every_knob_walk_moves_each_knob_by_at_most_one_within_bounds():
    annealer = dynamic.Annealer((1, 2, 3), maximums=(2, 8, 4), seed=3, walk='every_knob')
    moved, previous_trial = set(), None
    for step in range(300):
        before = annealer.accepted
        trial = annealer.step(float(step % 5))
        assert trial != annealer.accepted  # a walk that changes nothing is drawn again
        assert all(abs(a - b) <= 1 for a, b in zip(trial, annealer.accepted))
        assert all(1 <= value <= bound for value, bound in zip(trial, (2, 8, 4)))
        moved.add(sum(a != b for a, b in zip(trial, annealer.accepted)))
        assert annealer.accepted in (before, previous_trial)  # reverted, or the trial kept
        previous_trial = trial
    assert moved == {1, 2, 3}  # one, two or all three knobs at once, as the original's walk


def test_every_knob_walk_judges_a_trial_against_the_previous_interval():
    annealer = dynamic.Annealer((4, 4, 4), seed=0, walk='every_knob')
    first = annealer.step(100.0)      # (4, 4, 4) measured at 100
    second = annealer.step(90.0)      # first fell below 100: reverted
    assert annealer.accepted == (4, 4, 4)
    annealer.step(95.0)               # second beat the previous interval's 90 (not 100): kept
    assert annealer.accepted == second != first
    one_knob = dynamic.Annealer((4, 4, 4), seed=0, walk='one_knob')
    one_knob.step(100.0)
    one_knob.step(90.0)
    one_knob.step(95.0)               # below the accepted settings' 100: reverted
    assert one_knob.accepted == (4, 4, 4)


def test_every_knob_walk_climbs_to_near_the_best_setting():
    rng = np.random.default_rng(4)
    annealer = dynamic.Annealer((1, 1, 1), maximums=(8, 8, 16), seed=4, walk='every_knob')
    settings, distances = (1, 1, 1), []
    for _ in range(200):
        settings = annealer.step(fake_tps(settings) + rng.normal(0, 1.0))
        distances.append(sum(abs(a - b) for a, b in zip(annealer.accepted, BEST)))
    assert distances[0] >= 6 and np.mean(distances[-100:]) <= 3.5


def test_an_unknown_walk_is_named():
    with pytest.raises(ValueError, match="walk='sideways'; allowed: one_knob, every_knob"):
        dynamic.Annealer((1, 1, 1), walk='sideways')
