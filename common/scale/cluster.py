"""Which machines one multi-worker run spans (no TensorFlow here: the cluster must be set before
TensorFlow starts): TF_CONFIG, as tf.distribute.MultiWorkerMirroredStrategy reads it, written
from --cluster / --task_index or given by the user, and how a run's simulators split over it."""
import json
import os
import socket

from absl import flags

from common.system import errors

TF_CONFIG = 'TF_CONFIG'
# How a run spreads over devices and machines (common/scale/distribute.py builds each).
STRATEGIES = ('none', 'mirrored', 'multi_worker')


def define_flags():
    """Defines --cluster and --task_index in absl's registry, once (entry points call it before
    parsing; importing this module defines nothing)."""
    if 'cluster' in flags.FLAGS:
        return
    flags.DEFINE_list('cluster', None,
                      "Several machines (DistributeConfig.strategy = 'multi_worker'): every "
                      "machine's host:port, the chief (which writes the run directory) first, the "
                      'same list on every machine. Sets TF_CONFIG; without it, TF_CONFIG as set '
                      'is used.')
    flags.DEFINE_integer('task_index', None, "This machine's place in --cluster (0: the chief).")


def set_cluster(machines, task_index):
    """Sets TF_CONFIG for machine task_index of the cluster's machines ('host:port' each, the
    tasks of its 'worker' job); machine 0 is the chief. ValueError naming a bad address or
    index."""
    _check(machines, task_index)
    os.environ[TF_CONFIG] = json.dumps({'cluster': {'worker': list(machines)},
                                        'task': {'type': 'worker', 'index': task_index}})


def _check(machines, task_index):
    if not machines:
        raise ValueError('cluster: give at least one machine as host:port')
    for machine in machines:
        host, _, port = machine.rpartition(':')
        if not host or not port.isdigit():
            raise ValueError(f'cluster machine {machine!r} is not host:port')
    if not 0 <= task_index < len(machines):
        raise ValueError(f'task_index={task_index}; allowed: 0 to {len(machines) - 1} for '
                         f'{len(machines)} machines')


def from_environment():
    """(machines, task_index) of TF_CONFIG (its 'worker' job's addresses), None where it is not
    set; ValueError naming what is wrong with it (not JSON, no worker job, a chief or parameter
    servers, a bad index)."""
    text = os.environ.get(TF_CONFIG)
    if not text:
        return None
    try:
        spec = json.loads(text)
        cluster, task = spec['cluster'], spec['task']
        machines, task_type, task_index = cluster['worker'], task['type'], int(task['index'])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f'TF_CONFIG={text!r} is not {{"cluster": {{"worker": [...]}}, "task": '
                         f'{{"type": "worker", "index": i}}}} ({type(error).__name__}: {error})')
    others = sorted(set(cluster) - {'worker'})
    if others or task_type != 'worker':
        raise ValueError(f"TF_CONFIG: only a 'worker' job is supported (its task 0 is the "
                         f'chief), got task type {task_type!r} and jobs {sorted(cluster)}')
    _check(machines, task_index)  # left as the user wrote it (other keys, e.g. rpc_layer, stay)
    return list(machines), task_index


def resolve(strategy, addresses=None, task_index=None):
    """(addresses, task_index) of a run with DistributeConfig.strategy `strategy`: the host:port
    of every machine (TF_CONFIG's workers, the chief first) and this one's place, from the
    --cluster / --task_index flags (which set TF_CONFIG) or else TF_CONFIG; None for a run of one
    process. ValueError, before TensorFlow starts, naming a flag that does not fit."""
    if strategy != 'multi_worker':
        if addresses or task_index is not None:
            raise ValueError(f"--cluster and --task_index need DistributeConfig.strategy = "
                             f"'multi_worker', got {strategy!r}")
        return None
    if addresses or task_index is not None:
        if not addresses or task_index is None:
            raise ValueError('give both --cluster (every machine as host:port, the chief first) '
                             'and --task_index (this machine\'s place in it)')
        set_cluster(addresses, task_index)
    found = from_environment()
    if found is None:
        raise ValueError("DistributeConfig.strategy = 'multi_worker' needs --cluster and "
                         '--task_index (or TF_CONFIG) naming the machines')
    return found


def configure(config, addresses=None, task_index=None):
    """resolve() for a paper's config (its distribute: a DistributeConfig), checked with
    config.validate_cluster(number of machines); errors.ConfigError naming what does not fit,
    before anything starts."""
    try:
        found = resolve(config.distribute.strategy, addresses, task_index)
    except ValueError as error:
        raise errors.ConfigError(str(error))
    if found is not None:
        config.validate_cluster(len(found[0]))
    return found


def free_ports(count):
    """count localhost ports free now (bound, read, released), for machines started next."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(('localhost', 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
