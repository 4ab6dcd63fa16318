"""`python -m common.carry RUN_DIR FOLDER`: write a stopped run's portable state into FOLDER, so
that another machine goes on with it (`python -m <paper>_tf.main <its gin flags>
--resume_from=FOLDER`).

FOLDER gets the newest checkpoint (networks, optimizer slots, target network, counters,
generator state), the CSVs, run.json, invocation.json and operative_config.gin, each with its
SHA-256 in FOLDER/carry.json (common/run/carry.py). Replay memory is not carried: a carried
Q-value run refills it. A run still training is refused; stop it first (Ctrl-C saves).
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import os
import shlex

from common.launch import app
from common.system import machine_load


def resume_command(folder):
    """The command that resumes the carry in folder, from the invocation it records."""
    invocation = app.read_json(os.path.join(folder, app.INVOCATION_FILE)) or {}
    parts = ['python', '-m', f'{invocation.get("paper", "<paper>")}_tf.main']
    parts += [f'--gin_file={path}' for path in invocation.get('gin_files', [])]
    parts += [f'--gin_bindings={binding}' for binding in invocation.get('gin_bindings', [])]
    parts.append(f'--resume_from={folder}')
    return ' '.join(shlex.quote(part) for part in parts)


def main(args):
    if len(args) != 2:
        app.fail('usage: python -m common.carry RUN_DIR FOLDER')
    run_dir, folder = args
    from common.run import carry  # pylint: disable=import-outside-toplevel  (TensorFlow)
    manifest = carry.write(run_dir, folder)
    total = sum(entry['bytes'] for entry in manifest['files'].values())
    shared = sorted(key for key, entry in manifest['tensors'].items() if 'same_as' in entry)
    print(f'carried {run_dir} at step {manifest["env_steps"]:,} ({manifest["checkpoint"]}) '
          f'into {folder}: {len(manifest["files"])} files, {total / 2 ** 20:.1f} MiB'
          + (f'; {len(shared)} tensors equal to others stored once' if shared else ''))
    print(f'from {machine_load.describe(manifest["source"]["machine"])}, commit '
          f'{manifest["source"]["code"].get("git_commit", "?")}')
    print('not carried: ' + '; '.join(manifest['not_carried']))
    print(f'resume it with: {resume_command(folder)}')
    return 0


if __name__ == '__main__':
    app.execute(main, takes_args=True)
