"""The one shape of every paper's entry point: `python -m <paper>_tf.main --gin_file=... `.

A paper's main.py declares a Paper (how to configure it, train it and name what its checkpoints
depend on) and calls main(PAPER); the sequence lives here once: configure (one-line errors
before anything starts), process set-up, cluster, devices (common/system/devices.py: the GPUs
each process may use, and one line naming them), run directory, train.
"""
import dataclasses
from typing import Callable, Optional

from absl import flags

from common.launch import app
from common.launch import config as config_lib
from common.launch import memory_check
from common.run import session_stop
from common.scale import cluster
from common.system import devices
from common.system import errors
from common.system import native_dtype

FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class Paper:
    """What a paper package hands the entry point.

    configure(gin_files, gin_bindings) -> a resolved, validated config (common.launch.config.
    resolve; errors.ConfigError otherwise);
    train(config, run_dir) -> env steps reached (resuming from run_dir's checkpoint);
    model_identity(config) -> what its checkpoints depend on beside the environment (run.json);
    prepare(config): process set-up before TensorFlow works (threads), optional;
    cluster: whether it runs over several machines (--cluster, DistributeConfig 'multi_worker');
    compute(config) -> devices.Placement: which processes compute, optional (default: the main
    process, on the GPUs it sees or the CPU);
    memory(config) -> [memory_check.Need]: what the run will hold, checked against the memory
    available before anything starts (--skip_memory_check to go on anyway).
    """
    name: str
    configure: Callable
    train: Callable
    model_identity: Callable
    prepare: Optional[Callable] = None
    cluster: bool = False
    compute: Optional[Callable] = None
    memory: Optional[Callable] = None


def launch(paper):
    """configure -> prepare -> cluster -> devices -> run directory -> train, for the flags
    given."""
    config = paper.configure(FLAGS.gin_file, FLAGS.gin_bindings)
    stop = session_stop.from_flags()
    if paper.memory is not None:
        memory_check.check_flags(paper.memory(config))
    if paper.prepare is not None:
        paper.prepare(config)
    # Imported here: a paper's main module is re-imported by its spawned worker processes,
    # which must not import TensorFlow (common/scale/multi_worker.py does).
    from common.scale import multi_worker  # pylint: disable=import-outside-toplevel
    found = None
    if paper.cluster:
        found = cluster.configure(config, FLAGS.cluster, FLAGS.task_index)
    elif FLAGS.cluster or FLAGS.task_index is not None:
        raise errors.ConfigError(f'--cluster/--task_index: {paper.name} runs on one machine; '
                                 'only papers with a multi_worker strategy take them')
    if found is not None and 'resume_from' in FLAGS and FLAGS.resume_from:
        raise errors.ConfigError('--resume_from: a run over several machines resumes in place only '
                                 '(a carried run goes on on one machine)')
    if found is not None and stop is not None:
        raise errors.ConfigError('--stop_at_steps/--stop_at_score/--stop_at_minutes: a run over '
                                 'several machines ends '
                                 'at its total_steps only (its machines must stop at one step)')
    # Before the run directory and any op: the devices (and the one line naming them).
    devices.start_run(paper.compute(config) if paper.compute else None,
                      getattr(config, 'distribute', None),
                      note=native_dtype.dtype_note(getattr(config, 'compute_dtype', 'float32'),
                                              (getattr(config, 'asked', None) or {}).get(
                                                  'compute_dtype')))
    if getattr(config, 'seed_exact', False):
        devices.seed_exact()
    resolved = config_lib.resolved_record(config) if getattr(config, 'asked', None) else None
    with multi_worker.run_dir_of(found, lambda: app.start_run_dir(
            paper.name, config.env_config, resolved=resolved,
            checkpoint_every_steps=getattr(config, 'checkpoint_every_steps', None),
            **paper.model_identity(config))) as (run_dir, _):
        paper.train(config, run_dir)


def define_resume_flag():
    """Defines --resume_from in absl's registry, once."""
    if 'resume_from' not in FLAGS:
        flags.DEFINE_string('resume_from', None,
                            'A carried run (python -m common.carry RUN_DIR FOLDER): checked, '
                            'then written into a new run directory (--run_dir, or a new one) '
                            'and resumed from there; replay memory is refilled.')


def main(paper):
    """The entry point: launch(paper) under app.execute (flags, one-line errors, Ctrl-C)."""
    define_resume_flag()
    cluster.define_flags()
    session_stop.define_flags()
    memory_check.define_flags()
    app.execute(lambda: launch(paper))
