"""`python -m common.export --run_dir=RUN --out=DIR`: a run's policy as a SavedModel that plain
TensorFlow loads and runs, without this package.

The policy is loaded as common.evaluate loads it (a run directory's newest checkpoint, or a
published result's policy weights). The SavedModel holds the network's variables and one
function, `act` (also its `serving_default` signature): observations as the environment gives
them, [batch, *observation shape] (uint8 frames for Atari: the preprocessed, stacked frames the
network was trained on) -> {'action': the greedy action [batch] int32, and 'logits' [batch, A]
and 'value' [batch] for an actor-critic, or 'q_values' [batch, A] for a Q network}:

    policy = tf.saved_model.load(DIR)
    outputs = policy.act(tf.constant(observations))

DIR/assets.extra/ keeps the run's run.json and operative_config.gin (what it trained with) and
policy.json (the observation spec, the outputs and, for Atari, the ALE action id of each action).
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import json
import os
import shutil

from absl import flags
import numpy as np
import tensorflow as tf

from common import evaluate
from common.envs import atari
from common.launch import app
from common.system import errors

SAVED_MODEL_FILE = 'saved_model.pb'
EXTRA_DIR = 'assets.extra'
POLICY_FILE = 'policy.json'
OUTPUTS = {'logits': ('action', 'logits', 'value'), 'q_values': ('action', 'q_values')}


def policy_module(network, head, observation_spec):
    """A tf.Module whose `act` maps an observation batch to the greedy action and the network's
    outputs (OUTPUTS[head]). It tracks the network's variables, not the Keras model, so the
    SavedModel's object graph is plain variables and loads without Keras."""
    module = tf.Module(name='policy')
    module.weights = list(network.variables)

    @tf.function(input_signature=[observation_spec])
    def act(observations):
        if head == 'logits':
            logits, values = network(observations)
            return {'action': tf.argmax(logits, axis=-1, output_type=tf.int32),
                    'logits': logits, 'value': values}
        q_values = network(observations)
        return {'action': tf.argmax(q_values, axis=-1, output_type=tf.int32),
                'q_values': q_values}

    module.act = act
    return module


def describe(env_config, head, env_steps):
    """policy.json: what a user of the SavedModel needs to feed it and read it."""
    description = {
        'observation_shape': [int(size) for size in env_config.observation_shape],
        'observation_dtype': np.dtype(env_config.observation_dtype).name,
        'num_actions': int(env_config.num_actions()), 'outputs': list(OUTPUTS[head]),
        'env_steps': int(env_steps), 'env_config': repr(env_config)}
    if isinstance(env_config, atari.AtariConfig):
        description['ale_actions'] = list(atari.action_set(env_config.game,
                                                           env_config.full_action_space))
    return description


def _check_out(out):
    if os.path.isfile(out) or (os.path.isdir(out) and os.listdir(out) and not os.path.isfile(
            os.path.join(out, SAVED_MODEL_FILE))):
        raise errors.ConfigError(f'--out={out!r} is a file or a non-empty directory that holds no '
                                 'SavedModel; allowed: a new or empty directory, or an earlier '
                                 'export (replaced)')


def export(run_dir, out):
    """Writes run_dir's policy as a SavedModel in out; returns (out, policy.json's contents)."""
    _check_out(out)
    env_config, policy, env_steps = evaluate.load_policy(run_dir, greedy=True)
    spec = tf.TensorSpec((None,) + tuple(env_config.observation_shape),
                         tf.as_dtype(env_config.observation_dtype), name='observations')
    module = policy_module(policy.network, policy.head, spec)
    if os.path.isdir(out):
        shutil.rmtree(out)  # an earlier export (_check_out): no stale variables beside the new
    tf.saved_model.save(module, out, signatures={'serving_default': module.act})
    extra = os.path.join(out, EXTRA_DIR)
    os.makedirs(extra, exist_ok=True)
    for name in (app.RUN_FILE, app.OPERATIVE_CONFIG_FILE):
        if os.path.isfile(os.path.join(run_dir, name)):
            shutil.copyfile(os.path.join(run_dir, name), os.path.join(extra, name))
    description = describe(env_config, policy.head, env_steps)
    with open(os.path.join(extra, POLICY_FILE), 'w') as f:
        json.dump(description, f, indent=1)
        f.write('\n')
    return out, description


def main():
    flags_ = flags.FLAGS
    if not flags_.run_dir:
        app.fail('--run_dir is required')
    if not flags_.out:
        app.fail('--out is required: the directory to write the SavedModel to')
    out, description = export(flags_.run_dir, flags_.out)
    print(f'wrote {out}: a SavedModel of the policy at step {description["env_steps"]:,}; '
          f'act(observations {description["observation_dtype"]} [batch, '
          f'{", ".join(map(str, description["observation_shape"]))}]) -> '
          f'{", ".join(description["outputs"])}')


if __name__ == '__main__':
    flags.DEFINE_string('out', None, 'Directory to write the SavedModel to.')
    app.execute(main)
