"""PAAC rows for `python -m common.bench`: full training steps per second (act + step + update) of
`gin/paac/pong.gin` (the paper's config, nw = 8 worker processes), on the bench's game with its
number of environments; paac/auto_workers the same with num_workers 'auto' (one per usable core:
the README's first command until 2026-11-29), paac/xla with jit_compile, paac/bfloat16 with the
torso in bfloat16, paac/overlap learning while sampling, paac/ale_vector its environments in
ale_py's vector env (/alternating: in two groups taking turns with the policy), paac/network the
network's work alone (act calls and updates on one rollout, no environment); /reuse: the update
reusing the acting pass; paac/ale_vector/bfloat16 and paac/network/bfloat16: those two with the
torso in bfloat16 (/reuse/bfloat16: both levers), paac/seed_exact with RunConfig.seed_exact
(TensorFlow's deterministic ops). The bench's --num_workers applies to the env-only rows, not here: the
rows measure the commands a user runs."""
from common.envs import pools
from common.tools import timing
from common.units import on_policy
from common.units import samplers
from paac_tf import main as paac_main
from paac_tf import paac

REUSE = 'PAACConfig.reuse_activations = True'
BFLOAT16 = "PAACConfig.compute_dtype = 'bfloat16'"

def _configure(settings, sampler='synchronized', extra=()):
    """gin/paac/pong.gin on the bench's game and number of environments."""
    return paac_main.configure(['gin/paac/pong.gin'], [
        f"AtariConfig.game = '{settings['game']}'", f"PAACConfig.num_envs = {settings['num_envs']}",
        f"PAACConfig.sampler = '{sampler}'"] + list(extra))


def paac_rate(settings, sampler='synchronized', extra=(), kind='process'):
    """PAAC training steps per second (timing.measurement) of gin/paac/pong.gin, its
    environments in a pool of `kind` (pools.POOL_KINDS)."""
    config = _configure(settings, sampler, extra)
    learner = paac.build_learner(config)
    with pools.make_pool(config.env_config, config.num_envs, seed=0, kind=kind,
                         num_workers=config.num_workers,
                         num_groups=samplers.num_groups(sampler)) as pool:
        unit = on_policy.OnPolicyUnit(samplers.make_sampler(sampler, pool, config.horizon),
                                      learner, overlap=config.overlap_learning)
        try:
            rate = timing.rate(unit.iterate, config.steps_per_update, settings['seconds'],
                               settings['warmup_seconds'])
        finally:
            unit.finish()
        parts = unit.take_part_seconds()
    total = sum(parts.values())
    print('  paac time shares (the parts overlap with the alternating sampler): ' + ', '.join(
        f'{name} {seconds / total:.0%}' for name, seconds in parts.items()))
    return rate


def network_rate(settings, extra=()):
    """Env steps per second of PAAC's network work alone: a rollout's act calls and its update,
    again and again on one rollout of real frames, no environment stepping. With the env-only
    rate r_env it bounds a run that does both on the same cores one after the other:
    1 / (1 / r_env + 1 / r_network), so 0.5 of r_env needs r_network >= r_env. With
    reuse_activations bound, through the unit's policy and update (the acting pass reused)."""
    config = _configure(settings, extra=extra)
    learner = paac.build_learner(config)
    with pools.make_pool(config.env_config, config.num_envs, seed=0, kind='ale_vector') as pool:
        sampler = samplers.make_sampler('synchronized', pool, config.horizon)
        sampler.collect(lambda observations: learner.act(observations).numpy())
    rollout = sampler.rollout
    unit = on_policy.OnPolicyUnit(sampler, learner)
    arrays = (rollout.observations, rollout.actions, rollout.rewards, rollout.terminals)

    def iterate():
        for step in range(config.horizon):
            unit.policy(rollout.observations[step])
        unit.learn(arrays)

    return timing.rate(iterate, config.steps_per_update, settings['seconds'],
                       settings['warmup_seconds'])


def seed_exact_rate(settings):
    """paac with RunConfig.seed_exact: TensorFlow's deterministic ops in this row's process
    (each row runs in its own), so its ratio to paac is what seed-exact runs cost."""
    from common.system import devices  # pylint: disable=import-outside-toplevel
    devices.seed_exact()
    return paac_rate(settings, extra=['PAACConfig.seed_exact = True',
                                      'PAACConfig.log_every_steps = 10000'])


ROWS = {
    'paac': paac_rate,
    'paac/seed_exact': seed_exact_rate,
    'paac/alternating': lambda settings: paac_rate(settings, sampler='alternating'),
    # As many worker processes as this machine has cores (PAACConfig.num_workers 'auto'), not
    # the paper's nw = 8; ne unchanged.
    'paac/auto_workers': lambda settings: paac_rate(
        settings, extra=["PAACConfig.num_workers = 'auto'"]),
    # The network's calls XLA-compiled (RunConfig.jit_compile; common/learners/xla.py).
    'paac/xla': lambda settings: paac_rate(settings, extra=['PAACConfig.jit_compile = True']),
    # The network's torso in bfloat16 (RunConfig.compute_dtype; common/learners/networks.py).
    'paac/bfloat16': lambda settings: paac_rate(
        settings, extra=["PAACConfig.compute_dtype = 'bfloat16'"]),
    # The environments in ale_py's vector env (C++ threads, one call a step; make_pool.kind
    # 'ale_vector') instead of the paper's nw = 8 worker processes.
    'paac/ale_vector': lambda settings: paac_rate(settings, kind='ale_vector'),
    # The same in two groups (two vector envs) taking turns: one steps in ALE's C++ threads while
    # the policy acts on the other's observations (Stooke & Abbeel's alternating sampler).
    'paac/ale_vector/alternating': lambda settings: paac_rate(
        settings, sampler='alternating', kind='ale_vector'),
    # The network's work alone (act + update per rollout, no environment).
    'paac/network': network_rate,
    # Learning while sampling (OverlapConfig.overlap_learning; common/units/on_policy.py).
    'paac/overlap': lambda settings: paac_rate(
        settings, extra=['PAACConfig.overlap_learning = True']),
    # The update reusing the acting pass's torso outputs (ActingPassConfig.reuse_activations;
    # common/learners/activation_reuse.py): the same update without its own forward pass.
    'paac/reuse': lambda settings: paac_rate(settings, extra=[REUSE]),
    'paac/ale_vector/reuse': lambda settings: paac_rate(settings, extra=[REUSE],
                                                        kind='ale_vector'),
    'paac/network/reuse': lambda settings: network_rate(settings, extra=[REUSE]),
    # The vector env's row and the network's work alone with the torso in bfloat16.
    'paac/ale_vector/bfloat16': lambda settings: paac_rate(settings, extra=[BFLOAT16],
                                                           kind='ale_vector'),
    'paac/network/bfloat16': lambda settings: network_rate(settings, extra=[BFLOAT16]),
    # Both levers: the update reusing a bfloat16 acting pass.
    'paac/ale_vector/reuse/bfloat16': lambda settings: paac_rate(
        settings, extra=[REUSE, BFLOAT16], kind='ale_vector'),
    'paac/network/reuse/bfloat16': lambda settings: network_rate(settings,
                                                                 extra=[REUSE, BFLOAT16]),
}
