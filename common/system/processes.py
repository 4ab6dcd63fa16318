"""The lifecycle of the worker processes every paper starts: spawn them light, end them surely.

Start spawn processes without re-importing the parent's __main__ (which would import TensorFlow
into every worker), end stubborn ones with SIGTERM then SIGKILL, make children exit when their
parent is gone, release shared memory whatever views remain, hold Ctrl-C back while a teardown
runs; and the one error a dead worker raises, on which every training loop saves a checkpoint and
stops. No TensorFlow here.
"""
import contextlib
import importlib.util
import os
import signal
import sys
import threading
import time
import types

from common.system import devices

# What an asynchronous run does when one of its learner processes dies
# (common/units/async_learners.py): end the run, or go on with the others.
ON_LEARNER_DEATH = ('stop', 'continue')


class WorkerDiedError(RuntimeError):
    """A process or thread that steps environments (or trains) died or raised; a training run
    ends on it with a checkpoint of the learner and one line naming the worker."""


def release_shared_memory(shm, unlink=True):
    """Closes (and by default unlinks) a segment, tolerating live numpy views and a prior unlink."""
    try:
        shm.close()
    except BufferError:  # a view still exists; the mapping goes with the last view
        pass
    if unlink:
        try:
            shm.unlink()
        except FileNotFoundError:
            pass


@contextlib.contextmanager
def held_interrupts(signums=(signal.SIGINT, signal.SIGTERM)):
    """Runs the block to its end whatever Ctrl-C or SIGTERM comes: a teardown cut short leaves
    workers, threads and shared memory behind. The handler in place still runs at once (app's
    prints, or switches to 'already stopping'), but what it raises (KeyboardInterrupt), or a
    default action, comes after the block. Only the main thread can; elsewhere the block runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised, pending = [], []

    def hold(signum, frame):
        handler = previous[signum]
        if callable(handler):
            try:
                handler(signum, frame)
            except BaseException as error:  # pylint: disable=broad-except
                raised.append(error)
        elif handler in (signal.SIG_DFL, None):
            pending.append(signum)

    previous = {signum: signal.getsignal(signum) for signum in signums}
    for signum in signums:
        signal.signal(signum, hold)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            if signal.getsignal(signum) is hold:  # not replaced by the handler meanwhile
                signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        if raised:
            raise raised[0]
        if pending:
            signal.raise_signal(pending[0])


def pid_alive(pid):
    """Whether process pid runs (a zombie, killed but not yet reaped, counts as dead)."""
    try:
        with open(f'/proc/{pid}/stat') as f:
            return f.read().rsplit(')', 1)[1].split()[0] not in ('Z', 'X')
    except FileNotFoundError:
        return False
    except OSError:  # no /proc here: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def exit_when_orphaned(parent_pid: int, poll_seconds: float) -> threading.Thread:
    """Starts a daemon thread that ends this process at once when parent_pid is gone.

    A child blocked where it cannot look (a queue's feeder thread flushing into a pipe nobody
    reads any more, joined at exit) would otherwise outlive a parent killed with SIGKILL. The
    parent's pid is passed in: os.getppid() at start-up may already be init's.
    """
    def watch():
        while os.getppid() == parent_pid:
            time.sleep(poll_seconds)
        os._exit(0)  # nothing left to report to, and a clean exit could block

    watcher = threading.Thread(target=watch, name='orphan-watchdog', daemon=True)
    watcher.start()
    return watcher


def _child_main():
    module = types.ModuleType('__main__')
    module.__spec__ = importlib.util.find_spec('common.system.child_setup')
    return module


_CHILD_MAIN = _child_main()


def quiet_resource_tracker() -> None:
    """Starts multiprocessing's resource tracker, once per process, with its stderr on /dev/null.
    It outlives a main process that is SIGKILLed, removes the segments the run left, and would
    then print a 'leaked shared_memory objects' warning for each kill onto the user's terminal:
    a run's own endings remove its segments (common/system/segments.py), so what it would report
    is only what a kill leaves, which it cleans up anyway."""
    from multiprocessing import resource_tracker  # pylint: disable=import-outside-toplevel
    tracker = resource_tracker._resource_tracker  # pylint: disable=protected-access
    if getattr(tracker, '_fd', None) is not None:
        return  # running (or inherited from the parent)
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)  # the tracker is spawned with this process's fd 2
        resource_tracker.ensure_running()
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def start_process(process, gpus=None) -> None:
    """Start a spawn process that does not re-import the parent's __main__ module. gpus: the
    GPUs it may see (devices.child_gpus: devices.NO_GPU for none, a CUDA id, None for this
    process's), applied by its child_setup before TensorFlow can load."""
    # spawn makes every child import the parent's __main__ (e.g. `python -m paac_tf.main`,
    # which imports TensorFlow: seconds and hundreds of MB per worker, and TF must never run
    # in a worker). In its place the child runs child_setup (the parent's process set-up, no
    # TensorFlow) and then only what it unpickles.
    quiet_resource_tracker()
    main_module = sys.modules['__main__']
    in_main_thread = threading.current_thread() is threading.main_thread()
    # An ignored SIGINT is inherited, so Ctrl-C cannot hit a worker while it starts up.
    previous_handler = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main_thread else None
    sys.modules['__main__'] = _CHILD_MAIN
    try:
        with devices.child_gpus(gpus):
            process.start()
    finally:
        sys.modules['__main__'] = main_module
        # Unless a signal handler replaced ours meanwhile (a SIGTERM that began stopping the run
        # switches SIGINT to "already stopping"), which must stay.
        if in_main_thread and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.signal(signal.SIGINT, previous_handler)


def lower_priority(task_id: int, increment: int):
    """Makes thread or process `task_id` (a native thread id or a pid) `increment` nicer, up to 19
    (Linux, where niceness is per thread; raising it needs no privileges). Returns None, or a
    one-line warning where the kernel refuses or the platform has no per-thread niceness."""
    if increment <= 0:
        return None
    if not sys.platform.startswith('linux'):
        return 'lowering a priority is only done on Linux; it stays as it is'
    try:
        niceness = os.getpriority(os.PRIO_PROCESS, task_id)
        os.setpriority(os.PRIO_PROCESS, task_id, min(19, niceness + increment))
    except OSError as error:
        return f'could not lower the priority of {task_id}: {error}'
    return None


def pin_to_cpu(pid: int, index: int):
    """Pins process pid to one of the CPUs this process may use, the index-th modulo their
    count (Stooke & Abbeel pin each sampler worker to its own core, section 4.1). Returns None,
    or a one-line warning where pinning is impossible here (no sched_setaffinity, not allowed)."""
    if not hasattr(os, 'sched_setaffinity'):
        return 'CPU pinning is not available on this platform; workers run unpinned'
    try:
        allowed = sorted(os.sched_getaffinity(0))
        cpu = allowed[index % len(allowed)]
        os.sched_setaffinity(pid, {cpu})
    except OSError as error:
        return f'could not pin worker pid {pid} to a CPU ({error}); workers run unpinned'
    return None


@contextlib.contextmanager
def confined_to_cpus(count: int):
    """Confines every thread of this process, and so every thread and process it starts
    meanwhile, to the first count CPUs it may use; on exit each thread gets its CPUs back (a new
    one, the process's). Yields None, or a one-line warning where confining is impossible here
    (then nothing is changed)."""
    if not hasattr(os, 'sched_setaffinity') or not os.path.isdir('/proc/self/task'):
        yield 'confining to CPUs is only done on Linux; the process keeps all its CPUs'
        return
    allowed = sorted(os.sched_getaffinity(0))
    if count > len(allowed):
        raise ValueError(f'cannot confine to {count} CPUs: this process may use {len(allowed)}')
    saved = {}
    try:
        for name in os.listdir('/proc/self/task'):
            task_id = int(name)
            try:
                saved[task_id] = os.sched_getaffinity(task_id)
                os.sched_setaffinity(task_id, set(allowed[:count]))
            except (ProcessLookupError, FileNotFoundError):  # the thread ended meanwhile
                saved.pop(task_id, None)
        yield None
    finally:  # threads started meanwhile get the CPUs the process had
        for name in os.listdir('/proc/self/task'):
            try:
                os.sched_setaffinity(int(name), saved.get(int(name), set(allowed)))
            except (ProcessLookupError, FileNotFoundError):
                pass


def end_process(process, terminate_seconds: float = 1.0) -> None:
    """Ends a process that did not stop when asked: SIGTERM, then SIGKILL after a grace time."""
    if process.is_alive():
        process.terminate()
        process.join(timeout=terminate_seconds)
    if process.is_alive():
        process.kill()
        process.join()
