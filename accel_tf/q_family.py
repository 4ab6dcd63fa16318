"""DQN, categorical DQN and eps-Rainbow on the accelerated samplers (Stooke & Abbeel 2018,
sections 2 and 5): the shared off-policy phases over the sampler's worker processes, replay
organized by simulator (prioritized for Rainbow), and the shared Q-learner. Synchronous:
sampling and optimization alternate; asynchronous (QValueConfig.asynchronous): a trainer thread
optimizes while the sampler samples, at the same replay ratio."""
from common import evaluate
from common.envs import atari
from common.replay import prioritized_replay
from common.replay import replay as replay_lib
from common.replay import replay_files
from common.run import runner
from common.run import tracker as tracker_lib
from common.scale import multi_worker
from common.units import concurrent_off_policy
from common.units import off_policy
from common.units import samplers

def settings_for(config):
    q_values = config.q_values
    return off_policy.OffPolicySettings(
        batch_size=q_values.batch_size, updates_per_phase=q_values.updates_per_phase,
        min_replay_steps=q_values.min_replay_steps, target_period=q_values.target_period,
        initial_epsilon=q_values.initial_epsilon, final_epsilon=q_values.final_epsilon,
        epsilon_decay_steps=q_values.epsilon_decay_steps, initial_beta=q_values.initial_beta,
        beta_anneal_steps=config.total_steps,
        starts_at_terminals=atari.stack_restarts_at_terminal(config.env_config))


def make_phases(config, sampler, learner, replay, seed, num_machines=1):
    """The synchronous or the concurrent off-policy phases of config, as a context manager;
    num_machines: a multi-worker run's (these phases sample one machine's share)."""
    q_values = config.q_values
    settings = settings_for(config)
    if q_values.asynchronous:
        return concurrent_off_policy.ConcurrentOffPolicyPhases(
            sampler, learner, replay, settings, seed=seed, replay_input=q_values.replay_input,
            lead_phases=q_values.async_lead_phases)
    return off_policy.OffPolicyPhases(sampler, learner, replay, settings, seed=seed,
                                      replay_input=q_values.replay_input,
                                      num_machines=num_machines)


def make_replay(config, seed, num_machines=1):
    """Replay organized by simulator (section 5.2: the 1M capacity split over the simulators),
    n-step, prioritized if configured; in a multi-worker run, each machine's share of the
    capacity for its share of the simulators."""
    q_values = config.q_values
    env_config = config.env_config
    memory = replay_lib.ReplayMemory(
        q_values.replay_capacity // num_machines, env_config.observation_shape,
        env_config.observation_dtype, getattr(env_config, 'stack', 1),
        num_streams=config.num_envs // num_machines, seed=seed,
        n_step=q_values.n_step, gamma=config.gamma)
    if not q_values.prioritized:
        return memory
    return prioritized_replay.PrioritizedReplay(memory, q_values.priority_alpha, seed=seed)


def train(config, run_dir, learner, open_pool, strategy=None):
    """Runs until config.total_steps, resuming networks, optimizer and counters from run_dir's
    checkpoint. With QValueConfig.save_replay (one machine), a session that ends cleanly saves
    its replay (run_dir/replay) and a resumed run continues from it if it is the replay of the
    checkpoint resumed from; otherwise a resumed run refills replay. With a multi-worker
    strategy, open_pool(seed) opens this machine's share of the simulators; each machine fills its
    own replay and trains on its share of every minibatch, starting from the chief's state
    (common/scale/multi_worker.py); only the chief evaluates."""
    tracker = tracker_lib.tracker_for(
        run_dir, config, off_policy.UNIT_COLUMNS + learner.update_means.names,
        off_policy.trackables(learner))
    share = multi_worker.MachineShare.of(strategy)
    if share.num_machines > 1:
        multi_worker.start_from_chief(strategy, list(learner.online.variables)
                                      + list(learner.target.variables)
                                      + list(learner.optimizer.variables), tracker)
        for name in ('train_steps', 'weighted_train_step'):
            setattr(learner, name, multi_worker.ending_on_lost_peers(getattr(learner, name),
                                                                    share.is_chief))

    # Each worker of a multi-worker run fills its own replay and only the chief has the run
    # directory: their replays are not saved.
    saves_replay = config.q_values.save_replay and share.num_machines == 1
    session = {}

    def unit_of(pool):
        seed = share.action_seed(config.seed, tracker.env_steps)
        sampler = samplers.make_sampler(config.sampler, pool, config.horizon)
        replay = make_replay(config, seed, share.num_machines)
        if saves_replay and tracker.restored_from:
            replay_files.restore_for_resume(replay, run_dir, tracker.env_steps,
                                            carried=tracker.session_start == 'carried')
        session['replay'] = replay
        return QValueUnit(config, make_phases(config, sampler, learner, replay, seed,
                                              share.num_machines),
                          run_dir, evaluates=share.is_chief)

    def save_replay(env_steps):
        if 'replay' in session:  # the unit has closed its phases: no trainer thread draws
            replay_files.save_for_resume(session['replay'], run_dir, env_steps)

    local_envs = config.num_envs // share.num_machines
    return runner.train(
        tracker, lambda: open_pool(share.env_seed(config.seed + tracker.env_steps, local_envs)),
        unit_of, resume_note='' if saves_replay else ' (replay memory is refilled)',
        session_end=save_replay if saves_replay else None)


class QValueUnit(off_policy.OffPolicyUnit):
    """The shared off-policy unit (one sampling phase and its updates per advance(), or the
    phase while the trainer thread optimizes) with evaluations every
    QValueConfig.eval_every_steps on the chief."""

    def __init__(self, config, phases, run_dir, evaluates=True):
        super().__init__(phases)
        self.config = config
        self.run_dir = run_dir
        self.every = config.q_values.eval_every_steps if evaluates else 0

    def evaluation_due(self, since, now):
        return bool(self.every) and now // self.every > since // self.every

    def evaluate(self, env_steps, trained_seconds):
        evaluate.q_value_round(self.config, self.learner, self.run_dir, env_steps,
                               trained_seconds)
