"""What a multi-worker run (DistributeConfig 'multi_worker', several machines) adds to the
on-policy and off-policy units: every machine samples its own share of the simulators with its
own seeds, starts from the chief's restored state, and a lost peer ends the run with one line.

A machine is one process of the run, a task of tf.distribute's `worker` job. The gradients are
all-reduced across the machines (common/scale/distribute.py), so every machine trains on the
whole run's batch and holds identical parameters; the environment steps are counted for the
whole run on every machine. Only the chief (machine 0) writes the run directory; the entry point
gives the others a temporary one. Machines started together on one host get a GPU each or none
(localhost_gpus)."""
import contextlib
import dataclasses
import re
import tempfile

from common.scale import distribute
from common.system import devices
from common.system import errors
from common.system import processes

# Apart from any stream a run uses, so that machine i's actions are not machine 0's draws.
_MACHINE_SEED_STRIDE = 1_000_003


@dataclasses.dataclass(frozen=True)
class MachineShare:
    """This process's place in the cluster: machine (tf.distribute's worker) task_index of
    num_machines; num_workers stays the environment processes of a pool."""
    num_machines: int = 1
    task_index: int = 0

    @classmethod
    def of(cls, strategy):
        num_machines, task_index = distribute.machine_count_and_index(strategy)
        return cls(num_machines, task_index)

    @property
    def is_chief(self):
        return self.task_index == 0

    def env_seed(self, seed, local_num_envs):
        """The first simulator's seed of this machine's pool: simulator j of machine i is seeded as
        simulator i * local_num_envs + j of one process running them all."""
        return seed + self.task_index * local_num_envs

    def action_seed(self, seed, env_steps):
        """This machine's action-sampling seed from env_steps on (each machine its own draws)."""
        return seed + self.task_index * _MACHINE_SEED_STRIDE + env_steps


def _lost_peer(error):
    text = re.sub(r'\{\{function_node [^}]*\}\}\s*', '', str(error)).strip().splitlines()
    return (f'a peer machine of this multi-worker run is gone ({type(error).__name__}: '
            f'{text[0][:160] if text else ""}); every machine must be restarted')


def start_from_chief(strategy, variables, tracker):
    """Sets every machine's variables (a learner's networks and built optimizer state) and run
    counters to the chief's (restored from its checkpoint, or freshly initialized); returns this
    machine's MachineShare. A peer lost here ends the run with errors.RunError."""
    try:
        distribute.broadcast_from_chief(strategy, list(variables)
                                        + list(tracker.counters.variables))
    except distribute.PEER_FAILURES as error:
        raise errors.RunError(_lost_peer(error)) from error
    tracker.adopt_counters()
    share = MachineShare.of(strategy)
    if not share.is_chief:
        print(f'machine {share.task_index} of {share.num_machines}: starting at step '
              f'{tracker.env_steps:,} with the chief\'s parameters', flush=True)
    return share


def ending_on_lost_peers(train_fn, is_chief):
    """train_fn, ending the run with one line where a collective fails because a peer machine is
    gone: on the chief a processes.WorkerDiedError (the run saves a checkpoint first), on the
    others an errors.RunError (their files are temporary)."""
    def train(*args):
        try:
            return train_fn(*args)
        except distribute.PEER_FAILURES as error:
            if is_chief:
                raise processes.WorkerDiedError(_lost_peer(error)) from error
            raise errors.RunError(_lost_peer(error)) from error

    return train


def localhost_gpus(num_machines, ids=None):
    """The CUDA_VISIBLE_DEVICES of each of num_machines machines of one run on this one host
    (a bench row, a test): a GPU of its own each where there are as many (NCCL all-reduces), else
    none (RING on the CPUs); never two machines on one GPU, which would reserve it twice and make
    two NCCL ranks of one device. ids: the GPUs' CUDA ids (default: devices.gpu_ids())."""
    ids = devices.gpu_ids() if ids is None else list(ids)
    if len(ids) >= num_machines:
        return ids[:num_machines]
    return [devices.NO_GPU] * num_machines


@contextlib.contextmanager
def run_dir_of(found, start_run_dir):
    """(run directory, is_chief) of this process: start_run_dir()'s on the chief or a process of
    its own; on the cluster's other machines (found: common.scale.cluster.resolve's (addresses,
    task_index)) a temporary directory, removed at the end."""
    if found is None or found[1] == 0:
        yield start_run_dir(), True
        return
    addresses, task_index = found
    with tempfile.TemporaryDirectory(prefix=f'machine{task_index}-') as scratch:
        print(f'machine {task_index} of {len(addresses)}: the chief ({addresses[0]}) writes the '
              f'run directory; this machine writes to {scratch} (removed at the end)', flush=True)
        yield scratch, False
