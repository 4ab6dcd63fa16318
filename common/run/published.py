"""Which folders are records no command writes into: a published run (docs/results/NAME, written
by common.results: its policy, or its NO_POLICY.txt, and no checkpoints) and a carry (carry.json,
written by common.carry). A training command, a carry or a suite that took one as its directory
would set its curve aside and overwrite its files; each refuses it in one line instead, naming
the way to go on from it. No TensorFlow here."""
import os

from common.system import errors

# A published run's policy (common.results): its network's weights and the counters, nothing
# else (no optimizer, no replay), as a checkpoint with this prefix in the published directory.
POLICY_WEIGHTS = 'policy_weights'
# In a published run without a policy (common.results --without_policy): why it has none.
NO_POLICY_FILE = 'NO_POLICY.txt'
# What common.carry writes into a carry folder (common/run/carry.py's MANIFEST).
CARRY_MANIFEST = 'carry.json'

# How to go on training a published run.
GO_ON = ('resume its own run directory, or carry that (python -m common.carry RUN_DIR FOLDER) '
         'and start from the carry with --resume_from=FOLDER and a new --run_dir')


def is_published(path):
    """Whether path is a published run: common.results wrote its policy or its NO_POLICY.txt."""
    return (os.path.isfile(os.path.join(path, POLICY_WEIGHTS + '.index'))
            or os.path.isfile(os.path.join(path, NO_POLICY_FILE)))


def is_carry(path):
    return os.path.isfile(os.path.join(path, CARRY_MANIFEST))


def refuse_record(path, flag='--run_dir'):
    """ConfigError in one line when path is a published run or a carry: no command writes into
    either (what the flag named would be overwritten, its curve set aside)."""
    if is_published(path):
        raise errors.ConfigError(
            f'{flag}={path!r} is a published run (common.results wrote it; it keeps the final '
            f'policy, not the optimizer state a run goes on from) and is never written to; to '
            f'go on training it, {GO_ON}')
    if is_carry(path):
        raise errors.ConfigError(
            f'{flag}={path!r} is a carried run ({CARRY_MANIFEST}) and is never trained in: go on '
            f'from it with --resume_from={path} and a new --run_dir')
