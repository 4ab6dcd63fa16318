"""The README's learning numbers ("Does it learn?") and docs/results.md's headlines recomputed from
the published data: each claim's text must stand in its document, and the run's metrics.csv (or
eval.csv) must give the same numbers at the same rounding. A changed document or a republished
run that no longer agrees fails here, with the claim named."""
import math
import json
import os
import re

import pytest

from common.launch import app
from common.tools import scorecard
# tests/published_data.py (pytest.ini puts tests/ on the path)
from published_data import (_atari5_estimates, _best, _carried_stats, _clock_and_rate,
                            _curve_and_evaluation, _eval_and_episodes, _eval_at, _final_eval,
                            _first, _m, _mean_near, _memory, _memory_span, _published_runs, _reach,
                            _rows)
from time_to_score_preset_claims import TIME_TO_SCORE_PRESET_CLAIMS

# gin/accel/dqn_512_pong.gin, carried between machines.
DQN_512 = 'accel-dqn-512-pong'
# gin/paac/pong_fast.gin, the README's first command.
FAST_PAAC = 'paac-pong-ale-vector-reuse'
# gin/fast/pong.gin's three seeds.
RL_GAMES_SEEDS = ('accel-ppo-pong-rl-games', 'accel-ppo-pong-rl-games-seed-1',
                  'accel-ppo-pong-rl-games-seed-2')


def _median_reach(runs, score):
    """_reach of the run whose minutes to score are the median of an odd number of runs."""
    ordered = sorted(runs, key=lambda run: _first(run, score)[1])
    return _reach(ordered[len(ordered) // 2], score, 2, 1)


# (the claim as the README prints it, a function of the data giving that same text)
CLAIMS = [
    ('-15 at 22 min (4.5M steps), 0 at 37 min (7.6M), 18 at 41 min (8.4M)',
     lambda: '-15 at {1} ({0} steps), 0 at {3} ({2}), 18 at {5} ({4})'.format(
         *_reach(FAST_PAAC, -15, 1), *_reach(FAST_PAAC, 0, 1), *_reach(FAST_PAAC, 18, 1))),
    ('-15 at 43 min (4.8M steps), 0 at 70 min (8.0M), 18 at 107 min (12.2M)',
     lambda: '-15 at {1} ({0} steps), 0 at {3} ({2}), 18 at {5} ({4})'.format(
         *_reach('paac-pong', -15, 1), *_reach('paac-pong', 0, 1), *_reach('paac-pong', 18, 1))),
    ('-10 at 13.9M steps (124 min), past 0 at 16.7M (150 min)',
     lambda: '-10 at {0} steps ({1}), past 0 at {2} ({3})'.format(
         *_reach('ga3c-pong', -10, 1), *_reach('ga3c-pong', 0, 1))),
    ('-15.7 at 2.5M steps', lambda: f"{_mean_near('dqn-pong', 2_500_000):.1f} at 2.5M steps"),
    ('past -10 at 3.77M in 6.1 h', lambda: 'past -10 at {0} in {1}'.format(
        *_reach('dqn-pong', -10, 2, hours=True))),
    ('evaluations -2.7 at 4.0M', lambda: f"evaluations {_eval_at('dqn-pong', 4_000_000)[0]:.1f}"
                                        ' at 4.0M'),
    ('0 at 23 min (1.35M steps), 18 at 59 min (3.56M)',
     lambda: '0 at {1} ({0} steps), 18 at {3} ({2})'.format(
         *_reach('accel-ppo-pong-original-code', 0, 2),
         *_reach('accel-ppo-pong-original-code', 18, 2))),
    ('18 in 12.9 min (1.09M steps), the median of three seeds (8.8 min (0.74M), 12.9, 17.0 min '
     '(1.39M))', lambda: '18 in {1} ({0} steps), the median of three seeds ({3} ({2}), {4}, {6} '
     '({5}))'.format(*_median_reach(RL_GAMES_SEEDS, 18),
                     *_reach(RL_GAMES_SEEDS[0], 18, 2, 1),
                     _reach(RL_GAMES_SEEDS[2], 18, 2, 1)[1].removesuffix(' min'),
                     *_reach(RL_GAMES_SEEDS[1], 18, 2, 1))),
    ('-10 at 1.87M steps (34 min), best -6.6 at 3.45M',
     lambda: '-10 at {0} steps ({1}), best {2:.1f} at {3}'.format(
         *_reach('accel-ppo-pong', -10, 2), _best('accel-ppo-pong')[0],
         _m(_best('accel-ppo-pong')[1], 2))),
    ('-10 at 4.89M steps, past 0 at 5.97M in 76 min',
     lambda: '-10 at {0} steps, past 0 at {2} in {3}'.format(
         *_reach('accel-a2c-pong', -10, 2), *_reach('accel-a2c-pong', 0, 2))),
    ('-10 at 4.98M, past 0 at 6.29M in 57 min',
     lambda: '-10 at {0}, past 0 at {2} in {3}'.format(
         *_reach('accel-a3c-pong', -10, 2), *_reach('accel-a3c-pong', 0, 2))),
    ('-10 at 5.37M steps in 94 min', lambda: '-10 at {0} steps in {1}'.format(
        *_reach('accel-appo-pong', -10, 2))),
    ('-15.7 at 1.5M, -6.4 at 3M steps in 3.6 h',
     lambda: '{0:.1f} at 1.5M, {1:.1f} at 3M steps in {2:.1f} h'.format(
         _mean_near('accel-dqn-pong', 1_500_000), _mean_near('accel-dqn-pong', 3_000_000),
         float(_rows('accel-dqn-pong')[-1]['wall_time']) / 3600)),
    ('-13.4 at 1.5M, 14.2 at 3M steps in 8.6 h',
     lambda: '{0:.1f} at 1.5M, {1:.1f} at 3M steps in {2:.1f} h'.format(
         _mean_near(DQN_512, 1_500_000), _mean_near(DQN_512, 3_000_000),
         float(_rows(DQN_512)[-1]['wall_time']) / 3600)),
    ('at batch 512 (14.2 at 3M, carried between machines)',
     lambda: 'at batch 512 ({0:.1f} at 3M, carried between machines)'.format(
         _mean_near(DQN_512, 3_000_000))),
    ('-17.9 at 1.5M, -9.5 at 3M steps in 3.4 h',
     lambda: '{0:.1f} at 1.5M, {1:.1f} at 3M steps in {2:.1f} h'.format(
         _mean_near('accel-cat-dqn-pong', 1_500_000),
         _mean_near('accel-cat-dqn-pong', 3_000_000),
         float(_rows('accel-cat-dqn-pong')[-1]['wall_time']) / 3600)),
    ('-10 at 0.94M steps, past 0 at 1.12M in 4.3 h, 9.1 at 1.22M',
     lambda: '-10 at {0} steps, past 0 at {2} in {3}, {4:.1f} at 1.22M'.format(
         *_reach('accel-rainbow-pong', -10, 2, hours=True),
         *_reach('accel-rainbow-pong', 0, 2, hours=True),
         _mean_near('accel-rainbow-pong', 1_220_000))),
    ('14.8 +- 4.7 at 10M steps', lambda: '{0:.1f} +- {1:.1f} at 10M steps'.format(
        *_eval_at('paac-breakout', 10_000_000))),
    ('3.0 +- 2.1 at 10M steps', lambda: '{0:.1f} +- {1:.1f} at 10M steps'.format(
        *_eval_at('ga3c-breakout', 10_000_000))),
    ('past human at 3.19M steps, 64.2 +- 41.8 at 5M', lambda: 'past human at {0} steps, '
     '{1:.1f} +- {2:.1f} at 5M'.format(_reach('dqn-breakout', 31.8, 2)[0],
                                       *_final_eval('dqn-breakout')[:2])),
    ('past human at 1.51M steps, 150 at 6.53M, best 166.9 at 8.43M, 171.0 +- 86.3 at 10M steps',
     lambda: 'past human at {0} steps, 150 at {1}, best {2:.1f} at {3}, {4:.1f} +- {5:.1f} at '
     '10M steps'.format(_reach('accel-ppo-breakout', 31.8, 2)[0],
                        _reach('accel-ppo-breakout', 150, 2)[0], _best('accel-ppo-breakout')[0],
                        _m(_best('accel-ppo-breakout')[1], 2),
                        *_eval_at('accel-ppo-breakout', 10_000_000))),
]


def _final(run):
    """'<100-episode mean> at <steps>M steps in <minutes> min' of a run's last row."""
    last = _rows(run)[-1]
    return '{0:.1f} at {1} steps in {2:.1f} min'.format(
        _mean_near(run, int(last['env_steps'])), _m(int(last['env_steps']), 2),
        float(last['wall_time']) / 60)


# docs/results.md's headlines (its bold lines).
def _seed_aggregate(*runs):
    """'mean, percentile-bootstrap 95% interval low-high' of runs' final 100-episode means, as
    common.compare's table of runs that differ only in seed gives it."""
    from common import compare  # pylint: disable=import-outside-toplevel
    dirs = [os.path.join(app.PROJECT_ROOT, 'docs', 'results', run) for run in runs]
    table = compare.seed_rows([(compare.summarize(path), path) for path in dirs])
    assert len(table) == 2 and table[1][1] == str(len(runs)), table  # one group of them all
    mean, low, high = table[1][4:7]
    return f'{mean}, percentile-bootstrap 95% interval {low}-{high}'


RESULTS_CLAIMS = TIME_TO_SCORE_PRESET_CLAIMS + [
    ("evaluation is 171.0 +- 86.3 over 100 episodes (38 to 366), 563% of the human-normalized",
     lambda: 'evaluation is {0:.1f} +- {1:.1f} over 100 episodes ({2:.0f} to {3:.0f}), {4:.0f}% of '
     'the human-normalized'.format(*_final_eval('accel-ppo-breakout'), scorecard.normalized(
         _final_eval('accel-ppo-breakout')[0], 'breakout'))),
    ('18.04, percentile-bootstrap 95% interval 18.00-18.12', lambda: _seed_aggregate(
        'accel-ppo-pong-rl-games', 'accel-ppo-pong-rl-games-seed-1',
        'accel-ppo-pong-rl-games-seed-2')),
    ('18 at 8.36M steps in 41.0 min', lambda: '18 at {0} steps in {1}'.format(
        *_reach(FAST_PAAC, 18, 2, 1))),
    ('19.8 at 9.72M steps in 47.7 min', lambda: _final(FAST_PAAC)),
    ('Past -10 at 3.77M steps', lambda: 'Past -10 at {0} steps'.format(
        _reach('dqn-pong', -10, 2)[0])),
    ('18 at 3.56M steps in 59 min', lambda: '18 at {0} steps in {1}'.format(
        *_reach('accel-ppo-pong-original-code', 18, 2))),
    ('18 at 2.52M steps in 28.9 min', lambda: '18 at {0} steps in {1}'.format(
        *_reach('accel-ppo-pong-fast', 18, 2, 1))),
    ('18 at 2.85M steps in 32.1 min', lambda: '18 at {0} steps in {1}'.format(
        *_reach('accel-ppo-pong-fast-seed-1', 18, 2, 1))),
    ('18 at 0.74M steps in 8.8 min', lambda: '18 at {0} steps in {1}'.format(
        *_reach(RL_GAMES_SEEDS[0], 18, 2, 1))),
    ('18 at 1.39M steps in 17.0 min', lambda: '18 at {0} steps in {1}'.format(
        *_reach(RL_GAMES_SEEDS[1], 18, 2, 1))),
    ('18 at 1.09M steps in 12.9 min', lambda: '18 at {0} steps in {1}'.format(
        *_reach(RL_GAMES_SEEDS[2], 18, 2, 1))),
    ('Past 0 at 5.97M steps, 76 min', lambda: 'Past 0 at {0} steps, {1}'.format(
        *_reach('accel-a2c-pong', 0, 2))),
    ('Past 0 at 6.29M steps, 57 min', lambda: 'Past 0 at {0} steps, {1}'.format(
        *_reach('accel-a3c-pong', 0, 2))),
    ('-11.4 at 5.00M steps in 41.0 min', lambda: _final('accel-a2c-pong-envs16')),
    ('16 (7e-4): -19 at 2.32M steps (17 min)', lambda: '16 (7e-4): -19 at {0} steps '
     '({1})'.format(*_reach('accel-a2c-pong-envs16', -19, 2))),
    ('-18.6 at 5.00M steps in 25.6 min', lambda: _final('accel-a2c-pong-envs64')),
    ('-20.2 at 5.00M steps in 24.2 min', lambda: _final('accel-a2c-pong-envs256')),
    ('older code: -19 at 2.63M steps', lambda: 'older code: -19 at {0} steps'.format(
        _reach('accel-a2c-pong', -19, 2)[0])),
    ('64 (1.4e-3): -19 at 4.43M steps (23 min)', lambda: '64 (1.4e-3): -19 at {0} steps '
     '({1})'.format(*_reach('accel-a2c-pong-envs64', -19, 2))),
    ('-20.2 at 5.00M steps in 23.3 min', lambda: _final('paac-pong-ne256')),
    ('-12.5 at 5.00M steps in 36.9 min', lambda: _final('paac-pong-ne16')),
    ('-14.2 at 5.00M steps in 26.7 min', lambda: _final('paac-pong-ne64')),
    ('ne = 16 (alpha 0.0112): -15 at 4.16M steps (31 min)', lambda: 'ne = 16 (alpha 0.0112): '
     '-15 at {0} steps ({1})'.format(*_reach('paac-pong-ne16', -15, 2))),
    ('ne = 64 (alpha 0.0448): -15 at 4.46M steps (24 min)', lambda: 'ne = 64 (alpha 0.0448): '
     '-15 at {0} steps ({1})'.format(*_reach('paac-pong-ne64', -15, 2))),
    ('passing -15 within 4.16M-4.79M steps', lambda: 'passing -15 within {0}-{1} steps'.format(
        *sorted(_reach(run, -15, 2)[0] for run in ('paac-pong-ne16', 'paac-pong',
                                                   'paac-pong-ne64'))[::2])),
    ("The final policy's evaluation: 14.8 +- 4.7 over 30 episodes (best 30), 43.5% of the "
     'human-normalized range', lambda: "The final policy's evaluation: {0:.1f} +- {1:.1f} over "
     '30 episodes (best 30), {2:.1f}% of the human-normalized range'.format(
         *_eval_at('paac-breakout', 10_000_000),
         100 * (_eval_at('paac-breakout', 10_000_000)[0] - 1.7) / (31.8 - 1.7))),
    ("the final policy's evaluation is 3.0 +- 2.1 over 30 episodes (best 7), 4.3% of the "
     'human-normalized range', lambda: "the final policy's evaluation is {0:.1f} +- {1:.1f} "
     'over 30 episodes (best 7), {2:.1f}% of the human-normalized range'.format(
         *_eval_at('ga3c-breakout', 10_000_000),
         100 * (_eval_at('ga3c-breakout', 10_000_000)[0] - 1.7) / (31.8 - 1.7))),
    ('passed the human score (31.8) at 1.51M steps, 100 at 4.99M and 150 at 6.53M; best 166.9 at '
     '8.43M steps', lambda: 'passed the human score (31.8) at {0} steps, 100 at {1} and 150 at '
     '{2}; best {3:.1f} at {4} steps'.format(
         _reach('accel-ppo-breakout', 31.8, 2)[0], _reach('accel-ppo-breakout', 100, 2)[0],
         _reach('accel-ppo-breakout', 150, 2)[0], _best('accel-ppo-breakout')[0],
         _m(_best('accel-ppo-breakout')[1], 2))),
    ('passed the human score (31.8) at 3.19M steps and rose to 68.4 at 5.01M, its best**: 1.5 at '
     '1.0M (epsilon reaches 0.1), 13.0 at 2.0M, 26.8 at 3.0M, 43.2 at 4.0M, 59.6 at 4.5M',
     lambda: 'passed the human score (31.8) at {0} steps and rose to {1:.1f} at {2}, its best**: '
     '{3:.1f} at 1.0M (epsilon reaches 0.1), {4:.1f} at 2.0M, {5:.1f} at 3.0M, {6:.1f} at 4.0M, '
     '{7:.1f} at 4.5M'.format(
         _reach('dqn-breakout', 31.8, 2)[0], _best('dqn-breakout')[0],
         _m(int(_rows('dqn-breakout')[-1]['env_steps']), 2),
         *(_mean_near('dqn-breakout', steps) for steps in (1_000_000, 2_000_000, 3_000_000,
                                                            4_000_000, 4_500_000)))),
    ('61.0 at 4.65M to 45.1 at 4.75M, and was back at 68.0 by 5.0M, while the evaluation at 4.76M '
     'held at 68.2', lambda: '{0:.1f} at 4.65M to {1:.1f} at 4.75M, and was back at {2:.1f} by '
     '5.0M, while the evaluation at 4.76M held at {3:.1f}'.format(
         *(_mean_near('dqn-breakout', steps) for steps in (4_650_000, 4_750_000, 5_000_000)),
         _eval_at('dqn-breakout', 4_755_128)[0])),
    ('9.7 hours on the clock, 0.21 of them starved by the host (CPU steal up to 52%), median 160 '
     'steps/s on the first Xeon, 273 on the second', lambda: '{0:.1f} hours on the '
     'clock, {1:.2f} of them starved by the host (CPU steal up to {2:.0f}%), median {3:.0f} '
     'steps/s on the first Xeon, {4:.0f} on the second'.format(*_carried_stats('dqn-breakout'))),
    ('9.8 at 1.75M, 20.8 at 2.26M, 36.9 at 3.01M, 49.7 at 3.76M, 69.5 at 4.51M and 81.3 at 5.01M',
     lambda: '{0:.1f} at 1.75M, {1:.1f} at 2.26M, {2:.1f} at 3.01M, {3:.1f} at 3.76M, {4:.1f} at '
     '4.51M and {5:.1f} at 5.01M'.format(
         *(_eval_at('dqn-breakout', steps)[0] for steps in (1_752_256, 2_256_320, 3_006_904,
                                                            3_756_328, 4_506_328, 5_005_128)))),
    ("The final policy's evaluation by the suite (the paper's protocol: up to 30 no-op starts, "
     'epsilon 0.05): 64.2 +- 41.8 over 30 episodes (17 to 262), 207.6% of the human-normalized '
     'range', lambda: "The final policy's evaluation by the suite (the paper's protocol: up to 30 "
     'no-op starts, epsilon 0.05): {0:.1f} +- {1:.1f} over 30 episodes ({2:.0f} to {3:.0f}), '
     '{4:.1f}% of the human-normalized range'.format(
         *_final_eval('dqn-breakout'),
         scorecard.normalized(_final_eval('dqn-breakout')[0], 'breakout'))),
    ('(1,373 steps/s median) to 4.15M steps', lambda: '({0:,.0f} steps/s median) to 4.15M '
     'steps'.format(_carried_stats('paac-qbert')[3])),
    ('median 2,402 steps/s', lambda: f"median {_carried_stats('paac-qbert')[4]:,.0f} steps/s"),
    ('1.53 hours on the clock', lambda: f"{_carried_stats('paac-qbert')[0]:.2f} hours on the "
     'clock'),
    ("The 100-episode mean rose from 79 to 261 at 1M steps, 549 at 5M and 722 at 6M, best 854.8 "
     "at 7.02M, 672 at 10M; the final policy's evaluation is 570.0 +- 181.8 over 30 episodes (225 "
     'to 1,075), 3.1% of the human-normalized range', lambda: 'The 100-episode mean rose from '
     "{0:.0f} to {1:.0f} at 1M steps, {2:.0f} at 5M and {3:.0f} at 6M, best {4:.1f} at {5}, "
     "{6:.0f} at 10M; the final policy's evaluation is {7:.1f} +- {8:.1f} over 30 episodes ({9:,.0f} "
     'to {10:,.0f}), {11:.1f}% of the human-normalized range'.format(
         *_curve_and_evaluation('paac-qbert', 'qbert', (0, 1_000_000, 5_000_000, 6_000_000), 10_000_000))),
    ('1.30 hours on the clock, median 2,141 steps/s', lambda: _clock_and_rate('paac-name-this-game')),
    ("passed the human score (4,076) at 4.29M steps; 2,175 at 1M steps, 3,478 at 4M, 4,603 at 5M, "
     "best 4,957.3 at 6.83M, then 3,724 at 10M; the final policy's evaluation is 3,830.3 +- "
     '1,458.8 over 30 episodes (740 to 6,690), 86.2% of the human-normalized range',
     lambda: 'passed the human score (4,076) at {0} steps; {1:,.0f} at 1M steps, {2:,.0f} at 4M, '
     "{3:,.0f} at 5M, best {4:,.1f} at {5}, then {6:,.0f} at 10M; the final policy's evaluation "
     'is {7:,.1f} +- {8:,.1f} over 30 episodes ({9:,.0f} to {10:,.0f}), {11:.1f}% of the '
     'human-normalized range'.format(
         _reach('paac-name-this-game', 4076, 2)[0],
         *(_mean_near('paac-name-this-game', steps) for steps in (1_000_000, 4_000_000,
                                                                  5_000_000)),
         _best('paac-name-this-game')[0], _m(_best('paac-name-this-game')[1], 2),
         _mean_near('paac-name-this-game', 10_000_000), *_final_eval('paac-name-this-game'),
         scorecard.normalized(_final_eval('paac-name-this-game')[0], 'name_this_game'))),
    ('1.43 hours on the clock, median 1,952 steps/s', lambda: _clock_and_rate('paac-battle-zone')),
    ('The 100-episode mean stayed at random (2,360) to 5M steps (2,390 at 1M, 2,260 at 5M), then '
     "rose: 3,270 at 6M, best 4,590 at 9.91M, 4,170 at 10M; the final policy's evaluation is "
     '5,433.3 +- 3,105.7 over 30 episodes (1,000 to 11,000), 8.7% of the human-normalized range',
     lambda: 'The 100-episode mean stayed at random (2,360) to 5M steps ({0:,.0f} at 1M, {1:,.0f} '
     "at 5M), then rose: {2:,.0f} at 6M, best {3:,.0f} at {4}, {5:,.0f} at 10M; the final policy's "
     'evaluation is {6:,.1f} +- {7:,.1f} over 30 episodes ({8:,.0f} to {9:,.0f}), {10:.1f}% of the '
     'human-normalized range'.format(
         *_curve_and_evaluation('paac-battle-zone', 'battle_zone', (1_000_000, 5_000_000, 6_000_000), 10_000_000))),
    ('its entropy stayed at ln 18 (2.890) to 6.1M steps and was 2.881 at 10M',
     lambda: 'its entropy stayed at ln 18 ({0:.3f}) to {1} steps and was {2:.3f} at 10M'.format(
         math.log(18), _m(next(int(row['env_steps']) for row in _rows('paac-battle-zone')
                              if float(row['entropy']) < 2.885), 1),
         float(_rows('paac-battle-zone')[-1]['entropy']))),
    ('1.65 hours on the clock, median 1,809 steps/s', lambda: _clock_and_rate('paac-double-dunk')),
    ('The 100-episode mean stayed near random (-18.6) to 4M steps (-18.0 at 1M, -18.0 at 4M), then '
     'rose: -17.4 at 5M, -15.9 at 7M, above the human score (-15.5) from 7.72M steps, best -14.6 at '
     "8.12M, -15.9 at 10M; the final policy's evaluation is -15.9 +- 3.5 over 30 episodes (-22 to "
     '-8), 86.0% of the human-normalized range',
     lambda: 'The 100-episode mean stayed near random (-18.6) to 4M steps ({0:.1f} at 1M, {1:.1f} at '
     '4M), then rose: {2:.1f} at 5M, {3:.1f} at 7M, above the human score (-15.5) from {4} steps, '
     "best {5:.1f} at {6}, {7:.1f} at 10M; the final policy's evaluation is {8:.1f} +- {9:.1f} over "
     '30 episodes ({10:.0f} to {11:.0f}), {12:.1f}% of the human-normalized range'.format(
         *(_mean_near('paac-double-dunk', steps) for steps in (1_000_000, 4_000_000, 5_000_000,
                                                               7_000_000)),
         _reach('paac-double-dunk', -15.5, 2)[0], _best('paac-double-dunk')[0],
         _m(_best('paac-double-dunk')[1], 2), _mean_near('paac-double-dunk', 10_000_000),
         *_final_eval('paac-double-dunk'),
         scorecard.normalized(_final_eval('paac-double-dunk')[0], 'double_dunk'))),
    ('held its memory flat (789 to 790 MB after the warm-up, range 0.40%',
     lambda: 'held its memory flat ({0:.0f} to {1:.0f} MB after the warm-up, range {2:.2f}%'.format(
         *_memory_span('paac-double-dunk'))),
    ('1.24 hours on the clock, median 2,291 steps/s', lambda: _clock_and_rate('paac-phoenix')),
    ('The 100-episode mean rose from 330 to 957 at 1M steps (random 761), 2,451 at 4M, 3,142 at 6M, '
     "3,923 at 8M, best 4,465.8 at 9.14M, 4,255 at 10M; the final policy's evaluation is 4,853.0 +- "
     '1,604.3 over 30 episodes (1,970 to 11,600), 63.1% of the human-normalized range',
     lambda: 'The 100-episode mean rose from {0:,.0f} to {1:,.0f} at 1M steps (random 761), {2:,.0f} '
     'at 4M, {3:,.0f} at 6M, {4:,.0f} at 8M, best {5:,.1f} at {6}, {7:,.0f} at 10M; the final '
     "policy's evaluation is {8:,.1f} +- {9:,.1f} over 30 episodes ({10:,.0f} to {11:,.0f}), "
     '{12:.1f}% of the human-normalized range'.format(
         *(_mean_near('paac-phoenix', steps) for steps in (0, 1_000_000, 4_000_000, 6_000_000,
                                                           8_000_000)),
         _best('paac-phoenix')[0], _m(_best('paac-phoenix')[1], 2),
         _mean_near('paac-phoenix', 10_000_000), *_final_eval('paac-phoenix'),
         scorecard.normalized(_final_eval('paac-phoenix')[0], 'phoenix'))),
    ('788 to 794 MB over the 64 minutes after the warm-up, range 0.90%, +4.6 MB/h',
     lambda: '{0:.0f} to {1:.0f} MB over the {3:.0f} minutes after the warm-up, range {2:.2f}%, '
     '+{4:.1f} MB/h'.format(*_memory_span('paac-phoenix'), *_memory('paac-phoenix')[3:])),
    ('an Atari-5 estimate of the 57-game median of 16.5% of human at 10M steps each, against 76.6% '
     "for CleanRL's PPO", lambda: 'an Atari-5 estimate of the 57-game median of {0} of human at 10M '
     "steps each, against {1} for CleanRL's PPO".format(
         *_atari5_estimates('`gin/paac/pong_fast.gin`'))),
    ('-19.6 at 0.5M, -16.3 at 1.0M (epsilon reaches 0.1), **-13.4 at 1.5M**, -9.9 at 2.0M, 5.5 at '
     '2.5M, **14.2 at 3.0M** (best 14.3 at 2.88M); it passed -15 at 1.08M and 0 at 2.40M',
     lambda: '{0:.1f} at 0.5M, {1:.1f} at 1.0M (epsilon reaches 0.1), **{2:.1f} at 1.5M**, {3:.1f} '
     'at 2.0M, {4:.1f} at 2.5M, **{5:.1f} at 3.0M** (best {6:.1f} at {7}); it passed -15 at {8} '
     'and 0 at {9}'.format(
         *(_mean_near(DQN_512, steps) for steps in (500_000, 1_000_000, 1_500_000, 2_000_000,
                                                    2_500_000, 3_000_000)),
         _best(DQN_512)[0], _m(_best(DQN_512)[1], 2), _reach(DQN_512, -15, 2)[0],
         _reach(DQN_512, 0, 2)[0])),
    ('-14.0 over 50 episodes at 1M, -1.9 over 24 at 2M, **18.6 over 51 at 3M**',
     lambda: '{0:.1f} over {1} episodes at 1M, {2:.1f} over {3} at 2M, **{4:.1f} over {5} at '
     '3M**'.format(*(value for steps in (1_000_000, 2_000_000, 3_000_000)
                     for value in _eval_and_episodes(DQN_512, steps)))),
    ('to 9,880 MB when the replay was full at 2.32M steps, then stayed within 0.02% of that over the '
     'next 76 minutes of the replay wrapping (0.74 MB/h)',
     lambda: 'to {0:,.0f} MB when the replay was full at {1} steps, then stayed within {2:.2f}% of '
     'that over the next {3:.0f} minutes of the replay wrapping ({4:.2f} MB/h)'.format(
         *_memory(DQN_512))),
]


def _text(name):
    with open(os.path.join(app.PROJECT_ROOT, name)) as f:
        return re.sub(r'\s+', ' ', f.read())


@pytest.mark.parametrize('document, claim, from_data', [
    ('README.md', claim, from_data) for claim, from_data in CLAIMS] + [
    ('docs/results.md', claim, from_data) for claim, from_data in RESULTS_CLAIMS],
    ids=[claim for claim, _ in CLAIMS + RESULTS_CLAIMS])
def test_the_documents_learning_numbers_are_the_published_data_s(document, claim, from_data):
    assert claim in _text(document), f'{document} no longer says {claim!r}: update this claim'
    assert from_data() == claim


def test_the_readme_s_atari5_table_is_the_published_scorecard():
    table = '\n'.join(scorecard.glance_lines(_published_runs()))
    with open(os.path.join(app.PROJECT_ROOT, 'README.md')) as f:
        assert table in f.read(), f'the README\'s Atari-5 table should read:\n{table}'


# The runs whose hours or minutes the README quotes, and the machine its heading names for them.
README_TIMED_RUNS = (FAST_PAAC, 'paac-pong', 'ga3c-pong', 'dqn-pong', 'accel-ppo-pong-original-code',
                     'accel-ppo-pong-rl-games', 'accel-ppo-pong-rl-games-seed-1',
                     'accel-ppo-pong-rl-games-seed-2', 'accel-ppo-pong', 'accel-a2c-pong',
                     'accel-a3c-pong', 'accel-appo-pong', 'accel-dqn-pong', 'accel-cat-dqn-pong',
                     'accel-rainbow-pong')


def test_the_readme_names_the_machine_of_every_time_it_quotes():
    assert 'each time below: a 2-core AMD EPYC, Zen generation unrecorded' in _text('README.md')
    for run in README_TIMED_RUNS:
        with open(os.path.join(app.PROJECT_ROOT, 'docs', 'results', run, 'run.json')) as f:
            sessions = json.load(f)['sessions']
        for session in sessions:
            machine = session['machine']
            assert machine['cpu_model'].startswith('AMD EPYC'), (run, machine)
            assert machine['usable_cores'] == 2 and 'cpu_family' not in machine, (run, machine)
