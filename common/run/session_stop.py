"""Where this session of a run ends early: at an env step count, a 100-episode training mean or
the run's training minutes (--stop_at_steps, --stop_at_score, --stop_at_minutes). The run's
schedules still run over its total_steps, so the same command without the flag resumes it as if
it had never stopped; with it, a time-to-score run ends itself at its score (or its time
budget), and runs can follow each other on one machine."""
import dataclasses
import math
from typing import Optional

from absl import flags

from common.system import errors

__all__ = ('SessionStop', 'define_flags', 'from_flags')

FLAGS = flags.FLAGS


def define_flags():
    """Defines --stop_at_steps, --stop_at_score and --stop_at_minutes in absl's registry, once."""
    if 'stop_at_steps' in FLAGS:
        return
    flags.DEFINE_integer('stop_at_steps', None,
                         'End this session (checkpoint saved, exit 0) once the run has taken '
                         'this many env steps; total_steps, over which schedules run, is '
                         'unchanged, so the same command resumes it.')
    flags.DEFINE_float('stop_at_score', None,
                       'End this session (checkpoint saved, exit 0) once the mean training '
                       'score of the last 100 episodes reaches this (a full window of 100).')
    flags.DEFINE_float('stop_at_minutes', None,
                       "End this session (checkpoint saved, exit 0) once the run's clock (its "
                       "training time over all its sessions, metrics.csv's wall_time) reaches "
                       'this many minutes: a time budget, e.g. with --stop_at_score for a '
                       'time-to-score run.')


@dataclasses.dataclass(frozen=True)
class SessionStop:
    """steps: end at this env step count; score: end once a full 100-episode window's mean
    reaches it; minutes: end once the run's clock reaches it. Any may be None."""
    steps: Optional[int] = None
    score: Optional[float] = None
    minutes: Optional[float] = None
    window: int = 100

    def __post_init__(self):
        if self.steps is not None and (isinstance(self.steps, bool) or
                                       not isinstance(self.steps, int) or self.steps < 1):
            raise errors.ConfigError(f'--stop_at_steps={self.steps!r}: must be a positive '
                                     'number of env steps')
        if self.score is not None and not math.isfinite(self.score):
            raise errors.ConfigError(f'--stop_at_score={self.score!r}: must be a finite score')
        if self.minutes is not None and not (math.isfinite(self.minutes) and self.minutes > 0):
            raise errors.ConfigError(f'--stop_at_minutes={self.minutes!r}: must be a positive '
                                     'number of minutes')

    def reason(self, env_steps, recent_scores, elapsed_seconds=0.0):
        """Why the session ends at env_steps with these most recent episode scores (at most a
        window of them) and the run's clock at elapsed_seconds, or None while it goes on."""
        if self.steps is not None and env_steps >= self.steps:
            return f'reached --stop_at_steps={self.steps:,}'
        if self.score is not None and len(recent_scores) >= self.window:
            mean = sum(recent_scores) / len(recent_scores)
            if mean >= self.score:
                return (f'the {self.window}-episode mean {mean:.2f} reached '
                        f'--stop_at_score={self.score:g}')
        if self.minutes is not None and elapsed_seconds >= 60.0 * self.minutes:
            return (f"the run's clock {elapsed_seconds / 60:.1f} min reached "
                    f'--stop_at_minutes={self.minutes:g}')
        return None


def from_flags():
    """The SessionStop the command line asks for; None where it asks for none or no flags were
    parsed (a library user's own loop). ConfigError names a bad value."""
    if 'stop_at_steps' not in FLAGS or not FLAGS.is_parsed():
        return None
    if FLAGS.stop_at_steps is None and FLAGS.stop_at_score is None and \
            FLAGS.stop_at_minutes is None:
        return None
    return SessionStop(steps=FLAGS.stop_at_steps, score=FLAGS.stop_at_score,
                       minutes=FLAGS.stop_at_minutes)
