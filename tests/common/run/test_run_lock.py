"""run_lock: one process per run directory; a second one stops naming the holder, and a lock
left by a killed process is taken over with a line."""
import json
import os
import subprocess
import sys
import time

import pytest

from common.launch import app
from common.run import run_lock

_HOLD = """
import sys, time
from common.run import run_lock
try:
    line = run_lock.acquire(sys.argv[1])
except run_lock.RunDirInUse as error:
    print('refused:', error, flush=True)
    sys.exit(3)
print('holding', line, flush=True)
time.sleep(float(sys.argv[2]))
"""


def _start(run_dir, seconds):
    return subprocess.Popen([sys.executable, '-c', _HOLD, run_dir, str(seconds)],
                            stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT))


def test_of_two_processes_started_at_once_exactly_one_holds_the_run_dir(tmp_path):
    run_dir = str(tmp_path / 'run')
    first, second = _start(run_dir, 3), _start(run_dir, 3)
    outputs = [process.communicate(timeout=60)[0] for process in (first, second)]
    codes = sorted(process.returncode for process in (first, second))
    assert codes == [0, 3], outputs
    refused = next(text for text in outputs if text.startswith('refused'))
    holder = next(process for process in (first, second) if process.returncode == 0)
    assert f'--run_dir={run_dir} is in use by pid {holder.pid} on ' in refused
    # It ended normally: no holder is left named, and the lock is free.
    assert json.loads((tmp_path / 'run' / run_lock.LOCK_FILE).read_text() or '{}') == {}
    assert run_lock.acquire(run_dir) is None
    run_lock.release(run_dir)


def test_a_lock_left_by_a_killed_process_is_taken_over_with_a_line(tmp_path):
    run_dir = str(tmp_path / 'run')
    killed = _start(run_dir, 60)
    assert killed.stdout.readline().startswith('holding')
    with pytest.raises(run_lock.RunDirInUse, match=f'in use by pid {killed.pid}'):
        run_lock.acquire(run_dir)
    killed.kill()
    killed.wait()
    line = run_lock.acquire(run_dir)
    try:
        assert line.startswith(f'took over the lock of {run_dir} left by pid {killed.pid} on ')
        assert run_lock.acquire(run_dir) is None  # the same process again: already held
    finally:
        run_lock.release(run_dir)


@pytest.mark.slow
def test_an_entry_point_on_a_run_dir_in_use_stops_in_one_line_and_writes_nothing(tmp_path):
    run_dir = tmp_path / 'run'
    holder = _start(str(run_dir), 60)
    try:
        assert holder.stdout.readline().startswith('holding')
        before = sorted(os.listdir(run_dir))
        start = time.monotonic()
        result = subprocess.run(
            [sys.executable, '-m', 'paac_tf.main',
             f'--gin_file={os.path.join(app.PROJECT_ROOT, "gin/paac/pong.gin")}',
             f'--run_dir={run_dir}'], capture_output=True, text=True, timeout=120,
            env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT))
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and f'is in use by pid {holder.pid}' in lines[0]
        assert sorted(os.listdir(run_dir)) == before  # nothing written
        assert time.monotonic() - start < 60
    finally:
        holder.kill()
        holder.wait()
