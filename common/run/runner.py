"""The one run call: train(tracker, open_session, unit_of). A paper builds a Unit (what one step
of its training is: a rollout and an update, a round of actors, a poll of learner processes) in a
session it opens (a pool, a server); train opens the session, says where a resumed run starts,
loops the unit (counting, logging a metrics row, checkpointing and evaluating, the same way for
every paper) and saves at the end, on Ctrl-C or SIGTERM and when a worker dies (rlpyt's Runner
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
  finish()      -> runs however the loop ends, before train (below) saves
"""
import abc
import contextlib

from common.run import operative_config
from common.run import superseded
from common.system import errors
from common.system import processes

__all__ = ('Unit', 'train')


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


def _loop(tracker, unit):
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


def train(tracker, open_session, unit_of, resume_note='', session_end=None):
    """Loops unit_of(session) (a Unit) in a session from open_session() (a context manager: a
    pool, a server), so that every paper starts, stops and resumes alike; returns the env steps
    reached.

    Says where a resumed run starts and returns at once if the run is complete. A checkpoint is
    saved at the end, and on Ctrl-C or SIGTERM before the session closes (the interrupt then
    goes on, for the entry point's exit status), unless the weights diverged (DivergedError,
    nothing saved); the tracker's files are closed in every case. session_end(env_steps), if
    given, runs after the final checkpoint of such a clean end, once the session has closed (its
    threads stopped): what only a session's end saves (a replay memory, too big to save with
    every checkpoint). It reports its own failures; a further Ctrl-C does not cut it short (held
    at a normal end; after an interrupt, the entry point's handler only reports it).
    """
    try:
        if tracker.restored_from:
            print(f'resuming from {tracker.restored_from} at step {tracker.env_steps:,}'
                  f'{resume_note}')
            for name, count in tracker.superseded_rows.items():
                print(f'{count:,} rows of {name} past step {tracker.env_steps:,} (logged after '
                      f'that checkpoint) moved to {superseded.superseded_path(name)}')
        elif tracker.superseded_rows:
            moved = ', '.join(f'{count:,} rows of {name} to {superseded.superseded_path(name)}'
                              for name, count in tracker.superseded_rows.items())
            print(f'no checkpoint in {tracker.run_dir}: starting at step 0; what sessions before '
                  f'logged without saving one moved aside ({moved})')
        if tracker.done:
            print(f'run already complete: {tracker.env_steps:,} >= total_steps '
                  f'{tracker.total_steps:,}')
            return tracker.env_steps
        if tracker.check_session_stop():
            print(f'{tracker.stop_reason} at step {tracker.env_steps:,} already: nothing to run')
            return tracker.env_steps
        with contextlib.ExitStack() as end:
            with open_session() as session:
                # What ran, once every gin-configured piece (the pool's too) has been built.
                operative_config.write_operative_config(tracker.run_dir)
                try:
                    _loop(tracker, unit_of(session))
                except processes.WorkerDiedError as error:
                    # The learner is whole (a worker only steps environments or feeds it).
                    path = tracker.save()
                    first_line = str(error).strip().splitlines()[0]
                    raise errors.RunError(
                        f'{first_line}; run stopped at step {tracker.env_steps:,}, saved {path}; '
                        'rerun the same command to resume') from error
                except BaseException as error:  # pylint: disable=broad-except
                    if not errors.is_interrupt(error):
                        raise
                    path = tracker.save()
                    print(f'interrupted at step {tracker.env_steps:,}; saved {path}; rerun the '
                          'same command to resume')
                    if session_end is not None:  # once the session has closed (end unwinds)
                        end.callback(session_end, tracker.env_steps)
                    if isinstance(error, KeyboardInterrupt):
                        raise
                    raise KeyboardInterrupt from error
                # A normal end: the session's close and the final save run to their end; a
                # Ctrl-C meanwhile is raised after them (processes.held_interrupts).
                end.enter_context(processes.held_interrupts())
            tracker.save()
            if session_end is not None:
                session_end(tracker.env_steps)
        if tracker.stop_reason is not None and tracker.env_steps < tracker.total_steps:
            print(f'stopped at step {tracker.env_steps:,}: {tracker.stop_reason}; saved '
                  f'{tracker.newest_checkpoint}; rerun the same command to go on')
        return tracker.env_steps
    finally:
        tracker.close()
