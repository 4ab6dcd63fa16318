"""The one training loop. A paper hands the runner a Unit (what one step of its training is:
a rollout and an update, a round of actors, a poll of learner processes); the runner counts,
logs a metrics row, checkpoints and evaluates, the same way for every paper (rlpyt's Runner
over a Sampler and an Algorithm; Dopamine's Runner over an agent).

A unit's hooks, all but advance() optional:
  advance(env_steps) -> (env steps, updates, finished episodes as (score, length)) of one
                   iteration of the paper's loop, the run being at env_steps before it
  updates()     -> the update count a metrics row shows (an optimizer's iterations)
  row(seconds)  -> the paper's columns for a metrics row that covers `seconds`
  at_boundary() -> whether a checkpoint or an evaluation may be taken now (fast DQN: only
                   between target periods); True by default
  settle()      -> makes weights and counters final before a checkpoint, an evaluation or the
                   last row (waits for in-flight training, pulls shared parameters)
  evaluation_due(since, now), evaluate(env_steps, trained_seconds): periodic evaluation
  finish()      -> runs however the loop ends, before the lifecycle saves (tracker.py)
"""
import abc

__all__ = ('Unit', 'run')


class Unit(abc.ABC):
    """Defaults of the optional hooks; a paper's unit overrides what it has."""

    @abc.abstractmethod
    def advance(self, env_steps):
        """(env steps, updates, episodes) of one iteration from env_steps."""

    @abc.abstractmethod
    def updates(self):
        """The update count a metrics row shows."""

    def row(self, seconds):
        return {}

    def at_boundary(self):
        return True

    def settle(self):
        pass

    def evaluation_due(self, since, now):
        return False

    def evaluate(self, env_steps, trained_seconds):
        pass

    def finish(self):
        pass


def run(tracker, unit):
    """Advances unit until tracker.done (its total_steps, or a session stop reached at a
    boundary: common/run/session_stop.py), logging a row each log interval (and at the end),
    checkpointing and evaluating at boundaries; unit.finish() however it ends."""
    tracker.start_interval()
    boundary_steps = tracker.env_steps
    try:
        while not tracker.done:
            steps, updates, episodes = unit.advance(tracker.env_steps)
            tracker.add_steps(steps, updates=updates)
            tracker.add_episodes(episodes)
            boundary = unit.at_boundary()
            if boundary:
                tracker.check_session_stop()
            evaluating = boundary and unit.evaluation_due(boundary_steps, tracker.env_steps)
            if boundary and (tracker.done or tracker.checkpoint_due() or evaluating):
                unit.settle()
            if tracker.interval_due() or (tracker.done and boundary):
                tracker.log_interval(unit.updates(), unit.row(tracker.interval_seconds()))
            if boundary:
                tracker.maybe_checkpoint()
                boundary_steps = tracker.env_steps
            if evaluating:
                unit.evaluate(tracker.env_steps, tracker.clock.elapsed())
    finally:
        unit.finish()
