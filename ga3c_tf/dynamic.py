"""GA3C's dynamic adjustment (section 4.3): every interval change NP, NT or NA by +-1 at random,
keep the change if TPS rose, revert it if TPS fell.
"""
import numpy as np

KNOBS = ('num_predictors', 'num_trainers', 'num_agents')


class Annealer:
    """The random walk over (NP, NT, NA); step(tps) takes the TPS measured under the settings it
    last returned and gives the settings to run next."""

    def __init__(self, initial, minimums=(1, 1, 1), maximums=(8, 8, 128), seed=0):
        self.minimums = tuple(minimums)
        self.maximums = tuple(maximums)
        self.accepted = tuple(initial)      # the best settings found so far
        self.accepted_tps = None            # TPS measured under them
        self.trial = None                   # the change being measured, if any
        self.rng = np.random.default_rng(seed)

    def step(self, tps):
        """Judges the settings that ran during the last interval; returns the next settings."""
        if self.trial is None or self.accepted_tps is None or tps >= self.accepted_tps:
            if self.trial is not None:
                self.accepted = self.trial   # TPS rose (or this is the first measurement)
            self.accepted_tps = tps
        self.trial = self._propose()
        return self.trial

    def _propose(self):
        """The accepted settings with one knob moved by +-1, kept within the bounds."""
        if self.minimums == self.maximums:
            return self.accepted
        while True:
            knob = int(self.rng.integers(len(KNOBS)))
            change = int(self.rng.choice((-1, 1)))
            value = self.accepted[knob] + change
            if self.minimums[knob] <= value <= self.maximums[knob]:
                settings = list(self.accepted)
                settings[knob] = value
                return tuple(settings)
