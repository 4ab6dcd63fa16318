"""Synchronous data-parallel updates on several devices with tf.distribute (Stooke & Abbeel
2018, section 4.2: every device computes the gradient of its own share of the batch, the
gradients are all-reduced, every device applies the same update to identical parameters).

The learners stay single-device code: they average their gradients across replicas with
mean_across_replicas before clipping (a no-op outside a replica context), and
common.learners.optim's optimizers apply one update to every replica's copy. replicated() runs a
learner's train function on every replica with its share of the inputs. A machine without
accelerators runs the same code over logical CPU devices (use_logical_cpus), which is how the tests
run it.

'multi_worker' is the same over several processes or machines
(tf.distribute.MultiWorkerMirroredStrategy, configured by TF_CONFIG: set_cluster): each machine
(a task of TF_CONFIG's worker job) feeds its own data to its own replicas, the gradients are
all-reduced across all of them (RING collectives on CPUs, NCCL on GPUs), and a machine that
dies makes the others' next all-reduce fail with an UnavailableError once its heartbeats stop
(about 10 s), not hang (PEER_FAILURES).
The cluster itself is set before TensorFlow starts (common/scale/cluster.py)."""
import os

import tensorflow as tf

from common.scale import cluster as cluster_lib
from common.scale.cluster import STRATEGIES
from common.system import devices as devices_lib
from common.system import errors

# What the collectives of a multi-worker run raise once a peer machine is gone (its heartbeats
# stopped, its channel closed, the group aborted).
PEER_FAILURES = (tf.errors.UnavailableError, tf.errors.DeadlineExceededError,
                 tf.errors.CancelledError, tf.errors.AbortedError)


def use_logical_cpus(count):
    """Splits the CPU into count logical devices; must run before TensorFlow makes its devices
    (before any op), else raises RuntimeError saying so."""
    cpus = tf.config.list_physical_devices('CPU')
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(count)])
    except RuntimeError as error:
        raise RuntimeError(f'cannot make {count} logical CPU devices: TensorFlow already made '
                           f'its devices ({error})') from error


def make_strategy(kind, num_replicas):
    """None for 'none' (the default strategy); for 'mirrored', a MirroredStrategy over the first
    num_replicas of the GPUs this process sees (the others hidden from it, if TensorFlow has not
    made its devices yet), or where it sees none, over num_replicas logical CPU devices (made
    here likewise). More replicas than its GPUs (at least one) is refused: a ConfigError naming
    both (common/system/devices.py, mirrored_problem)."""
    if kind not in STRATEGIES:
        raise ValueError(f'strategy={kind!r}; allowed: {", ".join(STRATEGIES)}')
    if kind == 'none':
        return None
    if kind == 'multi_worker':
        return _multi_worker_strategy()
    gpus = tf.config.get_visible_devices('GPU')
    problem = devices_lib.mirrored_problem(num_replicas, len(gpus))
    if problem:
        raise errors.ConfigError(problem)
    if gpus:
        try:
            tf.config.set_visible_devices(gpus[:num_replicas], 'GPU')
        except RuntimeError:  # TensorFlow made its devices already: the others stay idle
            pass
        devices = [f'/gpu:{index}' for index in range(num_replicas)]
    else:
        cpu = tf.config.list_physical_devices('CPU')[0]
        if len(tf.config.get_logical_device_configuration(cpu) or ()) < num_replicas:
            use_logical_cpus(num_replicas)  # before list_logical_devices makes the devices
        devices = [device.name for device in tf.config.list_logical_devices('CPU')]
        devices = devices[:num_replicas]
    return tf.distribute.MirroredStrategy(devices)


def strategy_of(distribute_config):
    """The strategy of a paper's DistributeConfig (None for 'none' or no config), saying in one
    line where its replicas are; call it before anything runs a TensorFlow op, as logical CPU
    devices and the multi-worker runtime must be made first."""
    if distribute_config is None or distribute_config.strategy == 'none':
        return None
    strategy = make_strategy(distribute_config.strategy, distribute_config.num_replicas)
    devices = ', '.join(strategy.extended.worker_devices)
    if distribute_config.strategy == 'multi_worker':
        num_machines, index = machine_count_and_index(strategy)
        print(f'multi_worker: machine {index} of {num_machines}, replicas on {devices}',
              flush=True)
    else:
        print(f'{distribute_config.strategy}: {distribute_config.num_replicas} replicas on '
              f'{devices}', flush=True)
    return strategy


def collective_implementation():
    """The all-reduce of a multi-worker run: NCCL where this machine's replicas are GPUs (the
    GPUs it sees, none split into logical devices, which NCCL cannot tell apart), RING on
    CPUs. Machines on one host (localhost) each get a GPU of their own or none
    (common/scale/multi_worker.py, localhost_gpus)."""
    gpus = tf.config.get_visible_devices('GPU')
    if gpus and all(len(tf.config.get_logical_device_configuration(gpu) or ()) <= 1
                    for gpu in gpus):
        return tf.distribute.experimental.CommunicationImplementation.NCCL
    return tf.distribute.experimental.CommunicationImplementation.RING


def _multi_worker_strategy():
    if cluster_lib.TF_CONFIG not in os.environ:
        raise ValueError("strategy='multi_worker' needs TF_CONFIG (or --cluster and "
                         '--task_index) naming the machines')
    problem = devices_lib.multi_worker_problem(len(tf.config.get_visible_devices('GPU')))
    if problem:
        raise errors.ConfigError(problem)
    implementation = collective_implementation()
    return tf.distribute.MultiWorkerMirroredStrategy(
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=implementation))


def machine_count_and_index(strategy):
    """(machines in the cluster, this machine's index: the tasks of TF_CONFIG's 'worker' job) of
    a multi-worker strategy; (1, 0) for any other (one process)."""
    resolver = getattr(strategy, 'cluster_resolver', None)
    if resolver is None or not resolver.cluster_spec().as_dict():
        return 1, 0
    return resolver.cluster_spec().num_tasks('worker'), int(resolver.task_id or 0)


def is_chief(strategy):
    """True unless strategy is a multi-worker one and this process is not its machine 0 (the
    one that writes checkpoints and metrics)."""
    resolver = getattr(strategy, 'cluster_resolver', None)
    if resolver is None or not resolver.cluster_spec().as_dict():
        return True
    return resolver.task_type in ('chief', None) or (resolver.task_type == 'worker'
                                                     and resolver.task_id == 0)


def broadcast_from_chief(strategy, variables):
    """Every machine's variables set to the chief's (a resumed run restores the chief's
    checkpoint, then this): an all-reduce sum of the chief's values and the others' zeros, in
    float64 (exact for integer counters below 2**53). variables: the strategy's own (mirrored
    copies, all updated) or plain ones (the run's counters)."""
    chief = tf.constant(1.0 if is_chief(strategy) else 0.0, tf.float64)

    def chief_values():
        return [tf.distribute.get_replica_context().all_reduce(
            tf.distribute.ReduceOp.SUM, tf.cast(variable, tf.float64) * chief) for variable in
            variables]

    @tf.function
    def broadcast():
        values = strategy.run(chief_values)
        for variable, value in zip(variables, values):
            if isinstance(variable, tf.distribute.DistributedValues):
                strategy.extended.update(
                    variable, lambda local, new: local.assign(tf.cast(new, local.dtype)),
                    args=(value,), group=True)
            else:
                local = strategy.experimental_local_results(value)[0]
                variable.assign(tf.cast(local, variable.dtype))

    broadcast()


def _replica_context():
    """The replica context of a non-default strategy, or None."""
    if not tf.distribute.has_strategy():
        return None
    return tf.distribute.get_replica_context()


def mean_across_replicas(gradients, reduction='mean'):
    """The gradients averaged over the replicas (all-reduce), or summed for a loss that sums
    over its batch (reduction 'sum'); unchanged outside a replica context, or with one
    replica."""
    context = _replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return gradients
    operation = tf.distribute.ReduceOp.SUM if reduction == 'sum' else tf.distribute.ReduceOp.MEAN
    return context.all_reduce(operation, gradients)


def apply_to_every_replica(make_apply_fn, gradients, variables, slots):
    """Calls apply_fn(variable, gradient, *slot_variables) for each variable, on each replica's
    copies when called in a replica context or under a strategy's scope (then the gradients
    must already be the same on every replica: mean_across_replicas), else once. apply_fn is
    make_apply_fn(), called once, where the shared values it reads (the learning rate) are read
    once for all replicas.

    slots[i] is the tuple of optimizer slot variables of variables[i]."""
    def apply_all(strategy, gradients):
        apply_fn = make_apply_fn()
        for gradient, variable, variable_slots in zip(gradients, variables, slots):
            if strategy is None:
                apply_fn(variable, gradient, *variable_slots)
            else:
                strategy.extended.update(variable, apply_fn,
                                         args=(gradient,) + tuple(variable_slots), group=True)

    if not tf.distribute.has_strategy():
        apply_all(None, gradients)
    elif tf.distribute.in_cross_replica_context():
        apply_all(tf.distribute.get_strategy(), gradients)
    else:
        tf.distribute.get_replica_context().merge_call(apply_all, args=(gradients,))


def split_for_replica(tensor, axis, replica_id, num_replicas):
    """Replica replica_id's equal share of tensor along axis (whose size must divide evenly)."""
    tf.debugging.assert_equal(tf.shape(tensor)[axis] % num_replicas, 0, message=(
        f'a batch split over {num_replicas} replicas along axis {axis} must divide evenly'))
    size = tf.shape(tensor)[axis] // num_replicas
    begin = [0] * len(tensor.shape)
    sizes = [-1] * len(tensor.shape)
    begin[axis] = replica_id * size
    sizes[axis] = size
    return tf.slice(tensor, tf.stack(begin), tf.stack(sizes))


def run_split(strategy, train_fn, inputs, split_axes, gather=False):
    """train_fn on every replica of strategy with its share of each input (split along
    split_axes[i] over this machine's replicas; the sizes must divide evenly), called in a
    cross-replica context (in a
    tf.function, also inside its loops); returns train_fn's outputs averaged over the replicas,
    or with gather, this machine's replicas' outputs laid end to end (per-sample values of its
    inputs, such as TD errors). A synchronization (mean_across_replicas) inside a loop of
    train_fn is not supported by tf.distribute: loop around run_split instead."""
    local_replicas = len(strategy.extended.worker_devices)

    def shares(context):
        # This machine's inputs over its own replicas (with one machine, over all of them).
        replica = context.replica_id_in_sync_group % local_replicas
        count = local_replicas
        return tuple(split_for_replica(tensor, axis, replica, count)
                     for tensor, axis in zip(inputs, split_axes))

    outputs = strategy.run(train_fn,
                           args=strategy.experimental_distribute_values_from_function(shares))
    if gather:  # this machine's replicas' outputs, for this machine's inputs
        return tf.nest.map_structure(
            lambda value: tf.concat(strategy.experimental_local_results(value), axis=0), outputs)
    return tf.nest.map_structure(
        lambda value: strategy.reduce(tf.distribute.ReduceOp.MEAN, value, axis=None), outputs)


def replicated(strategy, train_fn, split_axes, input_signature, gather=False):
    """A tf.function of run_split(strategy, train_fn, its inputs, split_axes, gather); with
    strategy None, train_fn as a tf.function."""
    if strategy is None:
        return tf.function(train_fn, input_signature=input_signature)
    return tf.function(lambda *inputs: run_split(strategy, train_fn, inputs, split_axes, gather),
                       input_signature=input_signature)


def acting(strategy, act_fn, input_signature):
    """act_fn(observations) as a tf.function; under a one-machine strategy with several
    replicas, a batch that splits evenly runs on every replica, each with its own equal block
    of the observations and its own random stream, the actions laid end to end again: replica r
    acts for its own sampler groups' simulators (common/units/samplers.py). Any other batch (an
    evaluation's) runs on the first replica's copy; a multi-worker run's machines act on their
    local copy."""
    on_one_copy = tf.function(act_fn, input_signature=input_signature)
    if (strategy is None or strategy.num_replicas_in_sync == 1
            or machine_count_and_index(strategy)[0] > 1):
        return on_one_copy
    num_replicas = strategy.num_replicas_in_sync
    on_every_replica = replicated(strategy, act_fn, (0,), input_signature, gather=True)

    def act(observations):
        if len(observations) % num_replicas:
            return on_one_copy(observations)
        return on_every_replica(observations)

    act.on_every_replica = on_every_replica
    return act


def current_strategy():
    """The strategy whose scope this runs in, None outside any (for learners built under a
    scope, which must run their synchronizing steps through run_split)."""
    return tf.distribute.get_strategy() if tf.distribute.has_strategy() else None
