"""What the machine gave a run during a log interval: the 1-minute load average, the CPU time
of the run's own process tree, the share of the machine's CPU time its host took (steal) and the
memory that tree holds. A row whose run got far less CPU than it had cores for, or whose interval
ran far past its budget (a held process), does not measure the run's own speed; steal_pct says
when a virtual machine's host, not this machine's own work, took the CPU (the load average does
not show it); rss_mb over hours shows a leak (a queue, a replay, a retrace)."""
import os
import resource

# A host taking this share of the machine's CPU (steal_pct) or more is named on the progress line,
# and an interval it starved is left off the run's own clock (common/tools/run_clock.py).
STOLEN_PCT = 10.0
_CLOCK_TICKS = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100
_PAGE_BYTES = os.sysconf('SC_PAGE_SIZE') if hasattr(os, 'sysconf') else 4096


def load_average():
    """The 1-minute load average (runnable and waiting processes), None where the OS has none."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def cpu_ticks(stat_text):
    """(steal ticks, all ticks) of the machine's aggregate 'cpu' line of /proc/stat's text: user,
    nice, system, idle, iowait, irq, softirq and steal (guest time is inside user and nice);
    None when the line is missing or has no steal field (kernels before 2.6.11)."""
    for line in stat_text.splitlines():
        fields = line.split()
        if fields and fields[0] == 'cpu':
            if len(fields) < 9:
                return None
            ticks = [int(value) for value in fields[1:9]]
            return ticks[7], sum(ticks)
    return None


def machine_cpu_ticks():
    """cpu_ticks of this machine's /proc/stat, None without it."""
    try:
        with open('/proc/stat') as f:
            return cpu_ticks(f.read())
    except OSError:
        return None


def steal_pct(before, after):
    """Percent of the machine's CPU time between two cpu_ticks readings that its host took
    (a hypervisor running other guests on these cores); None when either reading is missing or
    no tick passed."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return 100.0 * max(after[0] - before[0], 0) / (after[1] - before[1])


def _proc_stats():
    """{pid: (ppid, CPU seconds of the process and its reaped children, resident bytes)} from
    /proc."""
    stats = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open(f'/proc/{name}/stat', 'rb') as f:
                text = f.read().decode('ascii', 'replace')
        except OSError:  # ended while we looked
            continue
        fields = text[text.rindex(')') + 2:].split()
        # After the name: state, ppid, ..., utime (11), stime, cutime, cstime (14), in ticks.
        # ... and rss (21), in pages.
        ticks = sum(int(value) for value in fields[11:15])
        stats[int(name)] = (int(fields[1]), ticks / _CLOCK_TICKS, int(fields[21]) * _PAGE_BYTES)
    return stats


def _tree(pid, stats):
    """pid and its live descendants, of those in stats."""
    children = {}
    for child, (parent, *_) in stats.items():
        children.setdefault(parent, []).append(child)
    tree, pending = [], [pid]
    while pending:
        current = pending.pop()
        if current in stats:
            tree.append(current)
        pending.extend(children.get(current, ()))
    return tree


def tree_cpu_seconds(pid=None, stats=None):
    """CPU seconds of process pid (this one by default) and all its descendants, live or ended:
    an ended child's time moves into its parent's reaped-children time when it is waited for."""
    pid = os.getpid() if pid is None else pid
    if not os.path.isdir('/proc'):
        own = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    stats = _proc_stats() if stats is None else stats
    return sum(stats[member][1] for member in _tree(pid, stats))


def tree_rss_mb(pid=None, stats=None):
    """Resident memory of process pid (this one by default) and its live descendants, in MB (1e6
    bytes): the sum of their resident sets, as ps and top show them. A page two of them map
    (an environment pool's shared memory, a library both load) counts in each; the workers that
    only step environments never load TensorFlow, so that is tens of MB a worker. (The
    proportional set size would split them, but reading it walks every page: 35 ms a row for a
    run holding 2.6 GB.) None without /proc."""
    if not os.path.isdir('/proc'):
        return None
    pid = os.getpid() if pid is None else pid
    stats = _proc_stats() if stats is None else stats
    return sum(stats[member][2] for member in _tree(pid, stats)) / 1e6


class IntervalLoad:
    """The load columns of one log interval: load_1m at its end, run_cpu_cores, the CPU seconds
    the run's process tree used per wall second of the interval (2.0: two cores busy), steal_pct,
    the percent of the machine's CPU time its host took over the interval, and
    rss_mb, the resident memory of that tree at its end (tree_rss_mb)."""

    COLUMNS = ('load_1m', 'run_cpu_cores', 'steal_pct', 'rss_mb')

    def __init__(self):
        self.restart()

    def restart(self):
        self._cpu = tree_cpu_seconds()
        self._ticks = machine_cpu_ticks()

    def take(self, wall_seconds):
        stats = _proc_stats() if os.path.isdir('/proc') else None
        cpu = tree_cpu_seconds(stats=stats)
        used, self._cpu = max(cpu - self._cpu, 0.0), cpu
        ticks = machine_cpu_ticks()
        stolen, self._ticks = steal_pct(self._ticks, ticks), ticks
        return {'load_1m': load_average(), 'run_cpu_cores': used / max(wall_seconds, 1e-9),
                'steal_pct': stolen, 'rss_mb': tree_rss_mb(stats=stats)}


# The vector extensions that move this project's rates (ALE emulation, oneDNN's float32 and
# bfloat16 kernels), as /proc/cpuinfo's flags name them.
VECTOR_FLAGS = ('avx2', 'avx512f', 'avx512_bf16', 'amx_bf16', 'amx_tile')


def cpu_identity(cpuinfo_text):
    """model name, vendor, family and model numbers and the VECTOR_FLAGS present, from the
    first processor of /proc/cpuinfo's text ('?' where a field is missing): 'AMD EPYC' covers
    Zen 1 to Zen 5, whose rates differ 2-4x; family and model tell them apart."""
    fields = {}
    for line in cpuinfo_text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(':')
        fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get('flags', '').split())
    return {'cpu_model': fields.get('model name', '?'), 'cpu_vendor': fields.get('vendor_id', '?'),
            'cpu_family': fields.get('cpu family', '?'), 'cpu_model_number': fields.get('model', '?'),
            'cpu_flags': [flag for flag in VECTOR_FLAGS if flag in flags]}


def describe(record):
    """One line for a machine record: 'MODEL (family F model M; avx2, avx512f), N cores' and
    its environment-only rate (common.envs.env_probe) when probed; a record written before
    family and flags were kept gives what it has."""
    record = record or {}
    details = []
    if record.get('cpu_family', '?') != '?':
        details.append(f"family {record['cpu_family']} model {record.get('cpu_model_number', '?')}")
    if record.get('cpu_flags'):
        details.append(', '.join(record['cpu_flags']))
    text = record.get('cpu_model', '?') + (f" ({'; '.join(details)})" if details else '')
    cores = record.get('usable_cores')
    text += f', {cores} cores' if cores else ''
    probe = record.get('env_probe')
    if probe:  # two significant figures: the same machine reads the same across sessions
        rate = float(f"{probe['env_steps_per_cpu_second']:.2g}")
        text += f", {probe['game']} env {rate:,.0f} steps per CPU second"
    return text


def machine_record():
    """This machine as a run records it: the CPU (cpu_identity), logical and usable cores."""
    try:
        with open('/proc/cpuinfo') as f:
            identity = cpu_identity(f.read())
    except OSError:
        identity = cpu_identity('')
    return {**identity, 'logical_cores': os.cpu_count(), 'usable_cores': usable_cores()}


def usable_cores():
    """CPUs this process may run on: os.cpu_count() bounded by the affinity mask (a container
    or taskset may allow fewer than the host has); at least 1."""
    count = os.cpu_count() or 1
    if hasattr(os, 'sched_getaffinity'):
        count = min(count, len(os.sched_getaffinity(0)))
    return max(count, 1)
