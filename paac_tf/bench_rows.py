"""PAAC rows for `python -m common.bench`: full training steps per second (act + step + update) on
the bench's game with the paper's config, nips network, and the bench's pool settings."""
from common import timing
from common.envs import pools
from paac_tf import main as paac_main
from paac_tf import paac


def paac_rate(settings, alternating_halves=False):
    """PAAC training steps per second: the paper's config with this bench's pool settings."""
    bindings = [f"AtariConfig.game = '{settings['game']}'",
                f"PAACConfig.num_envs = {settings['num_envs']}",
                f"PAACConfig.num_workers = {settings['num_workers']}",
                "PAACConfig.network = 'nips'",
                f'PAACConfig.alternating_halves = {alternating_halves}']
    config = paac_main.configure(['gin/paac/paper.gin'], bindings)
    learner = paac.build_learner(config)
    with pools.make_pool(config.env_config, config.num_envs, seed=0,
                         num_workers=config.num_workers,
                         num_groups=2 if alternating_halves else 1) as pool:
        runner = paac.PAAC(config, pool, learner)
        rate = timing.rate(runner.iterate, config.steps_per_update, settings['seconds'],
                           settings['warmup_seconds'])
        phases = runner.take_phase_seconds()
    total = sum(phases.values())
    print('  paac time shares (overlapped phases with alternating halves): ' + ', '.join(
        f'{name} {seconds / total:.0%}' for name, seconds in phases.items()))
    return rate


ROWS = {
    'paac': paac_rate,
    'paac/alternating': lambda settings: paac_rate(settings, alternating_halves=True),
}
