"""The NP/NT/NA annealing driven by a fake TPS signal converges to the best setting."""
import numpy as np

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
