"""A2C on CartPole-v1 composed from the shared layer as your own code would: a pool of gymnasium
environments, the synchronized sampler, the actor-critic learner and the one training loop, which
prints progress and writes metrics.csv, episodes.csv and checkpoints/ under --out_dir (rerun to
resume). Settings: Stooke & Abbeel (2018)'s A2C as tests/accel_tf/test_learning.py runs it; at
150k steps the last 100 episodes averaged 447 (seed 0) and 304 (seed 1) here, and
tests/examples/test_examples.py holds both seeds over 250 (random actions average about 22).
After `pip install -e .`:
    python examples/a2c_cartpole.py --steps=150000 --out_dir=/tmp/a2c-cartpole
"""
from common.launch import process_setup  # optional, first: quiet TensorFlow, oneDNN kernels
process_setup.configure()
# pylint: disable=wrong-import-position
from absl import app
from absl import flags

from common.envs import gym
from common.envs import pools
from common.learners import actor_critic
from common.learners import networks
from common.learners import optim
from common.run import runner
from common.run import tracker as tracker_lib
from common.units import on_policy
from common.units import samplers

flags.DEFINE_integer('steps', 150_000, 'Environment steps to train for.', lower_bound=1)
flags.DEFINE_string('out_dir', '/tmp/a2c-cartpole', 'Where the run files go.')
flags.DEFINE_enum('pool', 'process', ['serial', 'thread', 'process'], 'Who steps the envs.')
flags.DEFINE_integer('num_envs', 16, 'Environments, split over 2 workers.', lower_bound=2)
flags.DEFINE_integer('seed', 0, 'Seeds the environments, network and actions.', lower_bound=0)
flags.register_validator('num_envs', lambda num_envs: num_envs % 2 == 0,
                         'must be even: each of the 2 workers steps half the environments')
FLAGS = flags.FLAGS
ENV = gym.GymConfig('CartPole-v1')
HORIZON = 5  # steps of every environment per update


def main(_):
    model = networks.actor_critic_for(ENV, 'mlp', 'fan_in_uniform', seed=FLAGS.seed)
    optimizer = optim.RMSProp(3e-3, epsilon=1e-5, epsilon_inside_sqrt=False,
                              initial_mean_square=0.0)
    loss = actor_critic.LossSettings(gamma=0.99, entropy_coef=0.01, value_loss_coef=0.25,
                                     clip_norm=1.0)
    learner = actor_critic.ActorCriticLearner(model, optimizer, loss,
                                              actor_critic.observation_spec(ENV),
                                              seed=FLAGS.seed, horizon=HORIZON)
    tracker = tracker_lib.RunTracker(
        FLAGS.out_dir, FLAGS.steps, log_every_seconds=5.0, checkpoint_every_steps=50_000,
        extra_columns=on_policy.PHASE_COLUMNS + learner.update_means.names,
        trackables=on_policy.trackables(learner))

    def unit_of(pool):
        sampler = samplers.make_sampler('synchronized', pool, HORIZON)
        return on_policy.OnPolicyUnit(sampler, learner)

    # A resumed run steps fresh environments, seeded apart from the first session's.
    runner.train(tracker, lambda: pools.make_pool(
        ENV, FLAGS.num_envs, seed=FLAGS.seed + tracker.env_steps, kind=FLAGS.pool), unit_of)
    score = tracker.episode_stats.mean_score  # None before the first episode ends
    print(f'A2C CartPole-v1: {tracker.env_steps} steps, {tracker.episodes} episodes, '
          f'mean return of the last 100: {"n/a" if score is None else f"{score:.1f}"}')


if __name__ == '__main__':
    app.run(main)
