"""Accelerated-methods rows for `python -m common.bench`, on the bench's game and number of
environments, over the bench's worker count (one per CPU by default):
  accel/sample/sync, accel/sample/alternating: sampling with A3C-Net inference but no learning
      (Stooke & Abbeel, Figure 1b), to compare with env/process/stooke, the same workers and
      frames without inference;
  accel/a2c, accel/ppo: full training (sample + update) with gin/accel/a2c_pong.gin and
      gin/accel/ppo_pong.gin; PPO's horizon is set so the batch stays 2,048 (section 4.2's
      scaled form);
  accel/a2c/mirrored2: accel/a2c with DistributeConfig 'mirrored' over 2 replicas (logical CPU
      devices where there are no 2 GPUs), the overhead of the multi-device machinery;
  accel/a2c/multi_worker2: accel/a2c by 2 worker processes on localhost (DistributeConfig
      'multi_worker'), half the simulators each (accel_tf/multi_worker_bench.py);
  accel/a2c/learn, accel/ppo/learn: the optimization phase alone, again and again on one
      rollout the sampler collected (steps of that rollout per second): with env/process/stooke
      it bounds what any synchronous sampler-then-learner can reach on the machine,
      1 / (1 / env + 1 / learn);
  accel/a3c, accel/appo: 2 learner processes on one central store (gin/accel/a3c_pong.gin,
      appo_pong.gin), the bench's environments split between them, each over the bench's worker
      count; APPO's horizon keeps each actor-learner's batch at 2,048;
  accel/dqn_512, accel/cat_dqn_2048, accel/rainbow_512: the Q-value family's large-batch
      training (sample, then update from replay) with gin/accel/{dqn,cat_dqn,rainbow}_pong.gin
      at Appendix A.3's rate for the batch, the horizon set so each phase holds training
      intensity 8 (transitions trained per second = 8 x the row's steps/s); replay scaled down
      to 65,536 transitions (the 1M of the presets is 8.3 GB of 104x80 frames) and filled before
      timing; accel/{dqn,rainbow}_512/tf_data draw the minibatches through a prefetching tf.data
      pipeline, accel/{dqn,rainbow}_512/async train on a thread while the next phase samples
      (section 5.3), at the same replay ratio, /async_tf_data both; accel/dqn_32,
      accel/cat_dqn_32: gin/accel/dqn_pong.gin and cat_dqn_pong.gin at their own batch of 32
      (8 updates per phase, one call);
  accel/{a2c,ppo}/learn/xla, accel/{dqn,rainbow}_512/xla: those rows with the networks' calls
      XLA-compiled (AccelConfig.jit_compile; common/learners/xla.py);
  accel/a2c/reuse: accel/a2c with the update reusing the acting pass's torso outputs
      (AccelConfig.reuse_activations; common/learners/activation_reuse.py);
  peer/tf_agents_ppo: tf-agents' PPOClipAgent and DynamicStepDriver on the same pool, frames,
      A3C-Net-shaped networks, batch and epochs as accel/ppo (accel_tf/peer_tf_agents.py;
      tf-agents trains each epoch on the whole batch, one gradient step, where accel/ppo takes
      4 minibatch steps).
"""
import json
import os
import subprocess
import sys
import time

import numpy as np

from accel_tf import kinds
from accel_tf import learners
from accel_tf import main as accel_main
from accel_tf import q_family
from common.launch import app
from common.scale import cluster
from common.scale import distribute
from common.scale import multi_worker
from common.system import devices
from common.tools import timing
from common.units import async_learners
from common.units import on_policy
from common.units import samplers

PPO_BATCH = 2048
ASYNC_LEARNERS = 2
MULTI_WORKERS = 2


def configure_row(settings, preset, sampler, extra=()):
    """The row's config: preset (a name under gin/accel/, or a gin file's path from the
    repository root) on the bench's game, sampler, workers and environments."""
    num_workers = settings['num_workers']
    bindings = [f"AtariConfig.game = '{settings['game']}'",
                f"AccelConfig.sampler = '{sampler}'",
                f'AccelConfig.num_workers = {num_workers}',
                f"AccelConfig.envs_per_worker = {settings['num_envs'] // num_workers}"]
    path = preset if preset.endswith('.gin') else f'gin/accel/{preset}.gin'
    return accel_main.configure([os.path.join(app.PROJECT_ROOT, path)], bindings + list(extra))


def sampling_rate(settings, sampler):
    """Environment steps per second of one sampler with the A3C-Net choosing every action, and
    where each time step's wall time went (part_ms): waiting on the simulators ('env'), in the
    policy ('act'), the rest ('other': copies into the rollout, episode bookkeeping)."""
    config = configure_row(settings, 'a2c_pong', sampler)
    learner = kinds.build_learner(config)
    with learners.open_pool(config, seed=0) as pool:
        sampler_object = samplers.make_sampler(sampler, pool, config.horizon)

        def collect():
            sampler_object.collect(lambda observations: learner.act(observations).numpy())

        result = timing.rate(collect, config.steps_per_update, settings['seconds'],
                             settings['warmup_seconds'],
                             on_start=sampler_object.take_part_seconds)
        parts = sampler_object.take_part_seconds()
    time_steps = result['seconds'] * result['steps_per_sec'] / config.num_envs
    part_ms = {name: 1e3 * seconds / time_steps for name, seconds in parts.items()}
    part_ms['other'] = 1e3 * result['seconds'] / time_steps - sum(part_ms.values())
    return dict(result, part_ms=part_ms)


def training_rate(settings, preset, extra=()):
    """Environment steps per second of full training with a preset (sample, then update)."""
    config = configure_row(settings, preset, 'synchronized', extra)
    learner = kinds.build_learner(config, distribute.strategy_of(config.distribute))
    with learners.open_pool(config, seed=0) as pool:
        unit = on_policy.OnPolicyUnit(
            samplers.make_sampler(config.sampler, pool, config.horizon), learner,
            overlap=config.overlap_learning)
        try:
            return timing.rate(unit.iterate, config.steps_per_update, settings['seconds'],
                               settings['warmup_seconds'])
        finally:
            unit.finish()


def mirrored_rate(settings, replicas):
    """training_rate of A2C over `replicas` mirrored replicas: one GPU each where there are
    that many, else on logical CPU devices, GPUs hidden (mirrored refuses more replicas than
    GPUs in a run, common/scale/distribute.py; the row measures the machinery either way)."""
    if len(devices.gpu_ids()) < replicas:
        warning = devices.hide_gpus_here()
        if warning:
            print(warning, flush=True)
    return training_rate(settings, 'a2c_pong', ["DistributeConfig.strategy = 'mirrored'",
                                                f'DistributeConfig.num_replicas = {replicas}'])


def learning_only_rate(settings, preset, extra=()):
    """Environment steps per second of the optimization phase alone: train_on_rollout called
    again and again on one rollout of real frames (the parameters move; the work does not)."""
    config = configure_row(settings, preset, 'synchronized', extra)
    learner = kinds.build_learner(config)
    with learners.open_pool(config, seed=0) as pool:
        sampler = samplers.make_sampler(config.sampler, pool, config.horizon)
        sampler.collect(lambda observations: learner.act(observations).numpy())
    rollout = sampler.rollout

    def learn():
        learner.train_on_rollout(rollout.observations, rollout.actions, rollout.rewards,
                                 rollout.terminals)['loss'].numpy()

    return timing.rate(learn, config.steps_per_update, settings['seconds'],
                       settings['warmup_seconds'])


Q_TRAINING_INTENSITY = 8   # section 4.2: DQN and its variants
Q_REPLAY_CAPACITY = 65_536


def q_training_rate(settings, preset, batch_size, extra=()):
    """Environment steps per second of the Q-value family's synchronous training at batch_size:
    each phase samples num_envs x horizon steps and trains as many batches as keep training
    intensity 8; timed once replay holds enough steps to train."""
    num_envs = settings['num_envs']
    horizon = -(-batch_size // (Q_TRAINING_INTENSITY * num_envs))
    updates = Q_TRAINING_INTENSITY * num_envs * horizon // batch_size
    min_replay_steps = max(batch_size, 4096)
    config = configure_row(settings, preset, 'synchronized', [
        f'AccelConfig.horizon = {horizon}', f'QValueConfig.batch_size = {batch_size}',
        f'QValueConfig.updates_per_phase = {updates}',
        f'QValueConfig.replay_capacity = {Q_REPLAY_CAPACITY}',
        f'QValueConfig.min_replay_steps = {min_replay_steps}'] + list(extra))
    learner = learners.build_q_learner(config)
    with learners.open_pool(config, seed=0) as pool:
        sampler = samplers.make_sampler(config.sampler, pool, config.horizon)
        with q_family.make_phases(config, sampler, learner, q_family.make_replay(config, seed=0),
                                  seed=0) as phases:
            while len(phases.memory) < min_replay_steps:
                phases.iterate(0)
            return timing.rate(lambda: phases.iterate(0), config.steps_per_update,
                               settings['seconds'], settings['warmup_seconds'])


def async_rate(settings, preset, extra=()):
    """Environment steps per second of ASYNC_LEARNERS learner processes (the bench's
    environments split between them, each over the bench's worker count) on one central store,
    counted from their reports once each has reported twice (traced) and warmed up."""
    learner_settings = dict(settings, num_envs=settings['num_envs'] // ASYNC_LEARNERS)
    config = configure_row(learner_settings, preset, 'synchronized',
                        [f'AccelConfig.num_actor_learners = {ASYNC_LEARNERS}'] + list(extra))
    devices.hide_gpus_here()  # as a run's main process: only the learners compute
    variables = kinds.build_learner(config).model.trainable_variables
    size = sum(int(np.prod(variable.shape)) for variable in variables)
    state = async_learners.CentralState(size, kinds.slot_initial_values(config))
    store = async_learners.create_store(variables, state, config.async_learners.num_chunks)
    counted = {'steps': 0, 'reports': 0}
    try:
        with async_learners.LearnerProcesses(kinds.open_actor_learner, config, store.handle,
                                             ASYNC_LEARNERS, seed=0) as processes:
            def poll():
                for _, steps, _, _ in processes.take_reports(wait_seconds=0.01):
                    counted['steps'] += steps
                    counted['reports'] += 1

            while counted['reports'] < 2 * ASYNC_LEARNERS:
                poll()
            end_warmup = time.perf_counter() + settings['warmup_seconds']
            while time.perf_counter() < end_warmup:
                poll()
            return timing.counter_rate(lambda: counted['steps'], settings['seconds'], poll)
    finally:
        store.close()


def multi_worker_rate(settings, timeout_seconds=600):
    """accel/a2c/multi_worker2: starts its two workers (accel_tf/multi_worker_bench.py) on free
    localhost ports and returns the chief's measurement; RuntimeError with a worker's last lines
    if either fails."""
    addresses = ','.join(f'localhost:{port}' for port in cluster.free_ports(MULTI_WORKERS))
    env = dict(os.environ, PYTHONPATH=app.PROJECT_ROOT)
    gpus = multi_worker.localhost_gpus(MULTI_WORKERS)  # a GPU each, or none
    workers = [subprocess.Popen(
        [sys.executable, '-m', 'accel_tf.multi_worker_bench', f'--cluster={addresses}',
         f'--task_index={index}', f'--settings={json.dumps(settings)}'],
        env=dict(env, **{devices.VISIBLE_ENV: gpus[index]}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for index in range(MULTI_WORKERS)]
    try:
        outputs = [worker.communicate(timeout=timeout_seconds) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    for index, (worker, (_, stderr)) in enumerate(zip(workers, outputs)):
        if worker.returncode != 0:
            raise RuntimeError(f'multi-worker bench: worker {index} exited with '
                               f'{worker.returncode}:\n' + '\n'.join(stderr.splitlines()[-15:]))
    return json.loads(outputs[0][0].strip().splitlines()[-1])


def tf_agents_ppo_rate(settings):
    """Environment steps per second of tf-agents' PPO agent and driver with ppo_pong.gin's
    values on the bench's environments (imported here: tf-agents loads only for this row).
    tf-agents is not in the core install: without it, one line naming setup.py's extra."""
    try:
        from accel_tf import peer_tf_agents  # pylint: disable=import-outside-toplevel
    except ModuleNotFoundError as error:
        if (error.name or '').split('.')[0] != 'tf_agents':
            raise
        raise ModuleNotFoundError(
            "the peer/tf_agents_ppo row needs tf-agents, which is not installed; "
            "pip install -e '.[peers]'", name='tf_agents') from None
    config = configure_row(settings, 'ppo_pong', 'synchronized',
                        [f"AccelConfig.horizon = {PPO_BATCH // settings['num_envs']}"])
    with learners.open_pool(config, seed=0) as pool:
        peer = peer_tf_agents.TFAgentsPPO(
            pool, config.env_config.num_actions(), config.horizon,
            learning_rate=config.learning_rate, epochs=config.ppo.epochs,
            entropy_coef=config.actor_critic.entropy_coef,
            value_loss_coef=config.actor_critic.value_loss_coef,
            ratio_clip=config.ppo.ratio_clip, gae_lambda=config.actor_critic.gae_lambda,
            gamma=config.gamma)
        return timing.rate(peer.iterate, config.steps_per_update, settings['seconds'],
                           settings['warmup_seconds'])


XLA = 'AccelConfig.jit_compile = True'
BFLOAT16 = "AccelConfig.compute_dtype = 'bfloat16'"
FLOAT32 = "AccelConfig.compute_dtype = 'float32'"
# The time-to-score preset (not a paper's), its batch of 2,048 kept at the bench's num_envs.
FAST_PRESET = 'gin/fast/pong.gin'
# The Q rows at batch 512 (Appendix A.3's rates) and their variants: minibatches through tf.data,
# asynchronous, or both; XLA.
Q_BASES = {'dqn_512': ('dqn_pong', ['AccelConfig.learning_rate = 0.00075']),
           'rainbow_512': ('rainbow_pong', [f'AccelConfig.adam_epsilon = {0.005 / 512}'])}
Q_VARIANTS = {'': [],
              'tf_data': ["QValueConfig.replay_input = 'tf_data'"],
              'async': ['QValueConfig.asynchronous = True'],
              'async_tf_data': ['QValueConfig.asynchronous = True',
                                "QValueConfig.replay_input = 'tf_data'"],
              'xla': [XLA],
              'bfloat16': [BFLOAT16]}


def _q_row(base, variant=''):
    preset, bindings = Q_BASES[base]
    return lambda settings: q_training_rate(settings, preset, 512,
                                            bindings + Q_VARIANTS[variant])


ROWS = {
    'accel/sample/sync': lambda settings: sampling_rate(settings, 'synchronized'),
    'accel/sample/alternating': lambda settings: sampling_rate(settings, 'alternating'),
    'accel/a2c': lambda settings: training_rate(settings, 'a2c_pong'),
    'accel/ppo': lambda settings: training_rate(
        settings, 'ppo_pong', [f"AccelConfig.horizon = {PPO_BATCH // settings['num_envs']}"]),
    # Section 4.2's synchronous multi-device A2C on 2 replicas (logical CPU devices here, each
    # with half the simulators): on one machine's CPU it measures the machinery's overhead.
    'accel/a2c/mirrored2': lambda settings: mirrored_rate(settings, 2),
    # The same over 2 worker processes (several machines' code path on localhost).
    'accel/a2c/multi_worker2': multi_worker_rate,
    'accel/a2c/learn': lambda settings: learning_only_rate(settings, 'a2c_pong'),
    'accel/ppo/learn': lambda settings: learning_only_rate(
        settings, 'ppo_pong', [f"AccelConfig.horizon = {PPO_BATCH // settings['num_envs']}"]),
    'accel/a3c': lambda settings: async_rate(settings, 'a3c_pong'),
    'accel/appo': lambda settings: async_rate(
        settings, 'appo_pong',
        [f"AccelConfig.horizon = {PPO_BATCH * ASYNC_LEARNERS // settings['num_envs']}"]),
    # Appendix A.3's rates: DQN 7.5e-4 at batch 512; categorical DQN 4.2e-4 at 256 and above,
    # Adam epsilon 0.01 / L; eps-Rainbow its published rate, Adam epsilon 0.005 / L.
    'accel/dqn_512': _q_row('dqn_512'),
    # The presets at batch 32 (dqn_pong.gin, cat_dqn_pong.gin): 8 updates of 32 per phase.
    'accel/dqn_32': lambda settings: q_training_rate(settings, 'dqn_pong', 32),
    'accel/cat_dqn_32': lambda settings: q_training_rate(settings, 'cat_dqn_pong', 32),
    'accel/cat_dqn_2048': lambda settings: q_training_rate(
        settings, 'cat_dqn_pong', 2048, ['AccelConfig.learning_rate = 0.00042',
                                          f'AccelConfig.adam_epsilon = {0.01 / 2048}']),
    'accel/rainbow_512': _q_row('rainbow_512'),
    'peer/tf_agents_ppo': tf_agents_ppo_rate,
    # The networks' calls XLA-compiled (RunConfig.jit_compile; common/learners/xla.py).
    'accel/a2c/learn/xla': lambda settings: learning_only_rate(settings, 'a2c_pong', [XLA]),
    'accel/ppo/learn/xla': lambda settings: learning_only_rate(
        settings, 'ppo_pong',
        [f"AccelConfig.horizon = {PPO_BATCH // settings['num_envs']}", XLA]),
    # The networks' torsos in bfloat16 (RunConfig.compute_dtype; common/learners/networks.py).
    'accel/ppo/bfloat16': lambda settings: training_rate(
        settings, 'ppo_pong',
        [f"AccelConfig.horizon = {PPO_BATCH // settings['num_envs']}", BFLOAT16]),
    # Learning while sampling (OverlapConfig.overlap_learning; common/units/on_policy.py).
    'accel/a2c/overlap': lambda settings: training_rate(
        settings, 'a2c_pong', ['AccelConfig.overlap_learning = True']),
    'accel/ppo/overlap': lambda settings: training_rate(
        settings, 'ppo_pong',
        [f"AccelConfig.horizon = {PPO_BATCH // settings['num_envs']}",
         'AccelConfig.overlap_learning = True']),
    'accel/a2c/learn/bfloat16': lambda settings: learning_only_rate(
        settings, 'a2c_pong', [BFLOAT16]),
    # The update reusing the acting pass (ActingPassConfig.reuse_activations;
    # common/learners/activation_reuse.py): the same update without its own forward pass.
    'accel/a2c/reuse': lambda settings: training_rate(
        settings, 'a2c_pong', ['AccelConfig.reuse_activations = True']),
    'accel/ppo/learn/bfloat16': lambda settings: learning_only_rate(
        settings, 'ppo_pong',
        [f"AccelConfig.horizon = {PPO_BATCH // settings['num_envs']}", BFLOAT16]),
    # The time-to-score preset as it is (its compute_dtype 'auto': bfloat16 where the CPU runs it
    # natively) and in each dtype, which on a CPU without AVX512_BF16 or AMX measures what
    # emulated bfloat16 would cost.
    'accel/fast': lambda settings: training_rate(
        settings, FAST_PRESET, [f"AccelConfig.horizon = {PPO_BATCH // settings['num_envs']}"]),
    'accel/fast/float32': lambda settings: training_rate(
        settings, FAST_PRESET,
        [f"AccelConfig.horizon = {PPO_BATCH // settings['num_envs']}", FLOAT32]),
    'accel/fast/bfloat16': lambda settings: training_rate(
        settings, FAST_PRESET,
        [f"AccelConfig.horizon = {PPO_BATCH // settings['num_envs']}", BFLOAT16]),
}
ROWS.update({f'accel/{base}/{variant}': _q_row(base, variant)
             for base in Q_BASES for variant in Q_VARIANTS if variant})
