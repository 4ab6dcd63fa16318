"""Double DQN on CartPole-v1 composed from the shared layer: replay with one stream per simulator,
the Q-learner, off-policy phases (epsilon-greedy sampling into replay, then a fixed number of
minibatch updates: Stooke & Abbeel 2018, section 4.2) and the one training loop, which prints
progress and writes the run files under --out_dir. Settings: tests/common/units/test_off_policy.py's
CartPole test. Here an episode first reached 500 at 13.7k steps (seed 0) and 14.3k (seed 1), and
the last 100 averaged 231 and 220 at 30k; tests/examples/test_examples.py holds both seeds to a
500 before 25k and an average over 150 (random actions average about 22). After `pip install -e .`:
    python examples/dqn_cartpole.py --steps=30000 --out_dir=/tmp/dqn-cartpole
"""
from common.launch import process_setup  # optional, first: quiet TensorFlow, oneDNN kernels
process_setup.configure()
# pylint: disable=wrong-import-position
from absl import app
from absl import flags
import tensorflow as tf

from common.envs import gym
from common.envs import pools
from common.learners import networks
from common.learners import q_learner
from common.replay import replay
from common.run import runner
from common.run import tracker as tracker_lib
from common.units import off_policy
from common.units import samplers

flags.DEFINE_integer('steps', 30_000, 'Environment steps to train for.', lower_bound=1)
flags.DEFINE_string('out_dir', '/tmp/dqn-cartpole', 'Where the run files go.')
flags.DEFINE_integer('min_replay_steps', 1000, 'Steps stored before training.', lower_bound=64)
flags.DEFINE_integer('seed', 0, 'Seeds the environments, network and actions.', lower_bound=0)
FLAGS = flags.FLAGS
ENV = gym.GymConfig('CartPole-v1')
NUM_ENVS, HORIZON = 4, 4  # 16 steps a phase, then 16 updates of 64: replay ratio 64


def main(_):
    learner = q_learner.QLearner(
        lambda: networks.make_q_network(
            ENV.num_actions(), ENV.observation_shape, ENV.observation_dtype, network='mlp',
            torso_kwargs={'hidden_sizes': (64, 64), 'activation': 'relu'}, seed=FLAGS.seed),
        ENV.num_actions(), q_learner.centered_rmsprop(2.5e-4, decay=0.95, epsilon=0.01),
        q_learner.QSettings(gamma=0.99, double_dqn=True, huber_delta=10.0),
        tf.TensorSpec((None,) + ENV.observation_shape, ENV.observation_dtype))
    memory = replay.ReplayMemory(50_000, ENV.observation_shape, ENV.observation_dtype, stack=1,
                                 num_streams=NUM_ENVS, seed=FLAGS.seed)
    settings = off_policy.OffPolicySettings(
        batch_size=64, updates_per_phase=16, min_replay_steps=FLAGS.min_replay_steps,
        target_period=500, final_epsilon=0.02, epsilon_decay_steps=10_000)
    tracker = tracker_lib.RunTracker(
        FLAGS.out_dir, FLAGS.steps, log_every_seconds=5.0, checkpoint_every_steps=10_000,
        extra_columns=off_policy.UNIT_COLUMNS + learner.update_means.names,
        trackables=off_policy.trackables(learner))

    def unit_of(pool):  # the unit closes its phases when the loop ends
        sampler = samplers.make_sampler('synchronized', pool, HORIZON)
        return off_policy.OffPolicyUnit(off_policy.OffPolicyPhases(
            sampler, learner, memory, settings, seed=FLAGS.seed))

    runner.train(tracker, lambda: pools.SerialPool(
        ENV, NUM_ENVS, seed=FLAGS.seed + tracker.env_steps), unit_of)
    score = tracker.episode_stats.mean_score  # None before the first episode ends
    print(f'DQN CartPole-v1: {tracker.env_steps} steps, {tracker.episodes} episodes, '
          f'mean return of the last 100: {"n/a" if score is None else f"{score:.1f}"}')


if __name__ == '__main__':
    app.run(main)
