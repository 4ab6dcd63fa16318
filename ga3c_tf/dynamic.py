"""GA3C's dynamic adjustment (section 4.3) of NP, NT and NA, in the two forms that exist:
- 'one_knob', the paper's words: every interval change NP, NT or NA by +-1 at random, keep the
  change if TPS rose, revert it if TPS fell (judged against the best settings' TPS);
- 'every_knob', the authors' code (NVlabs/GA3C ThreadDynamicAdjustment.py): every knob moves by
  -1, 0 or +1 at once, and a trial is reverted only when its count fell below the previous
  interval's, whatever ran then.
"""
import numpy as np

KNOBS = ('num_predictors', 'num_trainers', 'num_agents')
WALKS = ('one_knob', 'every_knob')


class Annealer:
    """The random walk over (NP, NT, NA); step(tps) takes the TPS measured under the settings it
    last returned and gives the settings to run next."""

    def __init__(self, initial, minimums=(1, 1, 1), maximums=(8, 8, 128), seed=0,
                 walk='one_knob'):
        if walk not in WALKS:
            raise ValueError(f'walk={walk!r}; allowed: {", ".join(WALKS)}')
        self.minimums = tuple(minimums)
        self.maximums = tuple(maximums)
        self.walk = walk
        self.accepted = tuple(initial)      # the settings a trial falls back to
        self.accepted_tps = None            # TPS judged against ('one_knob': the accepted's,
        # 'every_knob': the previous interval's)
        self.trial = None                   # the change being measured, if any
        self.rng = np.random.default_rng(seed)

    def step(self, tps):
        """Judges the settings that ran during the last interval; returns the next settings."""
        if self.trial is None or self.accepted_tps is None or tps >= self.accepted_tps:
            if self.trial is not None:
                self.accepted = self.trial   # TPS rose (or this is the first measurement)
            self.accepted_tps = tps
        elif self.walk == 'every_knob':
            self.accepted_tps = tps  # reverted, and the next trial is judged against this one
        self.trial = self._propose()
        return self.trial

    def _propose(self):
        """The accepted settings moved by one step of the walk, kept within the bounds."""
        if self.minimums == self.maximums:
            return self.accepted
        while True:
            if self.walk == 'one_knob':
                changes = np.zeros(len(KNOBS), int)
                changes[int(self.rng.integers(len(KNOBS)))] = int(self.rng.choice((-1, 1)))
            else:  # as the original's direction = np.random.randint(3, size=3) - 1
                changes = self.rng.integers(-1, 2, len(KNOBS))
            settings = tuple(int(min(max(value + change, low), high)) for value, change, low, high
                             in zip(self.accepted, changes, self.minimums, self.maximums))
            # The original skips a walk that changes nothing without waiting an interval.
            if settings != self.accepted and (self.walk == 'every_knob' or all(
                    low <= value + change <= high for value, change, low, high
                    in zip(self.accepted, changes, self.minimums, self.maximums))):
                return settings
