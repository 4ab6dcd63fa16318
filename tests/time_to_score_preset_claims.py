"""docs/results.md's claims on the time-to-score preset's Atari-5 games (gin/fast/pong.gin, 3M
steps a game), each against the published data: tests/test_documented_numbers.py checks them with
its other claims."""
from common.tools import scorecard
from published_data import (_atari5_estimates, _atari5_with_human, _capped_games,
                            _clock_and_rate, _curve_and_evaluation, _final_eval,
                            _final_eval_seconds, _first, _m, _memory)


def _memory_window(run):
    return ("Memory {0:,.0f} MB at the window's start, range {2:.2f}%, +{4:.1f} MB/h over {3:.0f} "
            'minutes'.format(*_memory(run)))


def _evaluation_minutes(run):
    seconds = _final_eval_seconds(run)
    return f"{seconds / 60:.0f} minutes (eval.csv's {seconds:,.0f} s)"


TIME_TO_SCORE_PRESET_CLAIMS = [
    ('0.73 hours on the clock, median 1,165 steps/s', lambda: _clock_and_rate('fast-qbert')),
    ('100-episode training mean rose from 198 to 4,217 at 1M steps, 5,678 at 2M, best 11,004.2 at '
     "2.91M, 9,380 at 3M; the final policy's evaluation (Stooke & Abbeel's protocol, 100 episodes) "
     'is 10,471.2 +- 3,474.8 (300 to 15,325), 77.6% of the human-normalized range',
     lambda: '100-episode training mean rose from {0:,.0f} to {1:,.0f} at 1M steps, {2:,.0f} at 2M, '
     "best {3:,.1f} at {4}, {5:,.0f} at 3M; the final policy's evaluation (Stooke & Abbeel's "
     'protocol, 100 episodes) is {6:,.1f} +- {7:,.1f} ({8:,.0f} to {9:,.0f}), {10:.1f}% of the '
     'human-normalized range'.format(
         *_curve_and_evaluation('fast-qbert', 'qbert', (0, 1_000_000, 2_000_000), 3_000_000))),
    ('0.94 hours on the clock, median 811 steps/s', lambda: _clock_and_rate('fast-name-this-game')),
    ('training mean was 1,020 at 23k steps (random 2,292: the first games are short), 3,904 at 1M, '
     "3,826 at 2M, best 4,627.6 at 2.78M, 4,570 at 3M; the final policy's evaluation (100 episodes) "
     'is 4,488.2 +- 1,076.0 (1,950 to 7,240), 123.1% of the human-normalized range',
     lambda: 'training mean was {0:,.0f} at 23k steps (random 2,292: the first games are short), '
     "{1:,.0f} at 1M, {2:,.0f} at 2M, best {3:,.1f} at {4}, {5:,.0f} at 3M; the final policy's "
     'evaluation (100 episodes) is {6:,.1f} +- {7:,.1f} ({8:,.0f} to {9:,.0f}), {10:.1f}% of the '
     'human-normalized range'.format(
         *_curve_and_evaluation('fast-name-this-game', 'name_this_game', (22_528, 1_000_000, 2_000_000), 3_000_000))),
    ('Memory 2,100 MB over the last session\'s 10 minutes', lambda: "Memory {0:,.0f} MB over the "
     "last session's {3:.0f} minutes".format(*_memory('fast-name-this-game'))),
    ('0.77 hours on the clock, median 1,102 steps/s', lambda: _clock_and_rate('fast-battle-zone')),
    ('training mean was 4,000 at 8k steps, 9,950 at 1M, 13,340 at 2M, best 21,190.0 at 2.77M, 18,680 '
     "at 3M; the final policy's evaluation (100 episodes) is 20,620.0 +- 5,371.7 (11,000 to 37,000), "
     '51.5% of the human-normalized range',
     lambda: 'training mean was {0:,.0f} at 8k steps, {1:,.0f} at 1M, {2:,.0f} at 2M, best {3:,.1f} '
     "at {4}, {5:,.0f} at 3M; the final policy's evaluation (100 episodes) is {6:,.1f} +- {7:,.1f} "
     '({8:,.0f} to {9:,.0f}), {10:.1f}% of the human-normalized range'.format(
         *_curve_and_evaluation('fast-battle-zone', 'battle_zone', (8_192, 1_000_000, 2_000_000), 3_000_000))),
    ('Memory 2,059 MB at the window\'s start, range 0.19%, +4.6 MB/h over 36 minutes',
     lambda: _memory_window('fast-battle-zone')),
    ('0.79 hours on the clock, median 1,056 steps/s', lambda: _clock_and_rate('fast-double-dunk')),
    ('training mean was -18.2 at 0.1M steps (random -18.6), -16.7 at 1M, past the human score '
     "(-15.5) at 1.26M, -15.9 at 2M, best -13.8 at 2.72M, -13.8 at 3M; the final policy's "
     'evaluation (100 episodes) is -3.8 +- 3.3 (-12 to 2), 476.8% of the human-normalized range',
     lambda: 'training mean was {0:.1f} at 0.1M steps (random -18.6), {1:.1f} at 1M, past the '
     'human score (-15.5) at {human}, {2:.1f} at 2M, best {3:.1f} at {4}, {5:.1f} at 3M; the final '
     "policy's evaluation (100 episodes) is {6:.1f} +- {7:.1f} ({8:.0f} to {9:.0f}), {10:.1f}% of "
     'the human-normalized range'.format(
         *_curve_and_evaluation('fast-double-dunk', 'double_dunk', (100_000, 1_000_000, 2_000_000), 3_000_000),
         human=_m(_first('fast-double-dunk', -15.5)[0], 2))),
    ('from 1.17M steps on, 60 of the 117 training games after 1M steps ran to the 27,000-step cap '
     "(108,000 frames), where a game that never reaches its score limit is scored as it stands "
     "(those games' mean -7.9; the others ended at -24 to -10)",
     lambda: 'from {0} steps on, {1} of the {2} training games after 1M steps ran to the '
     '27,000-step cap (108,000 frames), where a game that never reaches its score limit is scored '
     "as it stands (those games' mean {3:.1f}; the others ended at {4:.0f} to {5:.0f})".format(
         *_capped_games('fast-double-dunk', 27_000, 1_000_000))),
    ("32 minutes (eval.csv's 1,948 s)", lambda: _evaluation_minutes('fast-double-dunk')),
    ('Memory 2,060 MB at the window\'s start, range 0.20%, +5.7 MB/h over 37 minutes',
     lambda: _memory_window('fast-double-dunk')),
    ('0.93 hours on the clock, median 907 steps/s', lambda: _clock_and_rate('fast-phoenix')),
    ('training mean was 833 at 0.1M steps (random 761), 2,736 at 1M, 3,264 at 2M, best 3,832.4 at '
     "3.00M, 3,832 at 3M; the final policy's evaluation (100 episodes) is 3,784.3 +- 1,051.1 (400 "
     'to 5,780), 46.6% of the human-normalized range',
     lambda: 'training mean was {0:,.0f} at 0.1M steps (random 761), {1:,.0f} at 1M, {2:,.0f} at '
     "2M, best {3:,.1f} at {4}, {5:,.0f} at 3M; the final policy's evaluation (100 episodes) is "
     '{6:,.1f} +- {7:,.1f} ({8:,.0f} to {9:,.0f}), {10:.1f}% of the human-normalized range'.format(
         *_curve_and_evaluation('fast-phoenix', 'phoenix', (100_000, 1_000_000, 2_000_000), 3_000_000))),
    ("21 minutes (eval.csv's 1,255 s)", lambda: _evaluation_minutes('fast-phoenix')),
    ("Memory 1,593 MB at the window's start, range 0.21%, +4.2 MB/h over 45 minutes",
     lambda: _memory_window('fast-phoenix')),
    ("an Atari-5 estimate of the 57-game median of 50.1% of human at 3M steps each, against 16.5% "
     "for PAAC's preset at 10M and 76.6% for CleanRL's PPO at 10M",
     lambda: 'an Atari-5 estimate of the 57-game median of {0} of human at 3M steps each, against '
     "{2} for PAAC's preset at 10M and {1} for CleanRL's PPO at 10M".format(
         *_atari5_estimates('`gin/fast/pong.gin`'),
         _atari5_estimates('`gin/paac/pong_fast.gin`')[0])),
    ('counted at the human score instead of its 476.8%, the estimate would be 43.9%',
     lambda: 'counted at the human score instead of its {0:.1f}%, the estimate would be '
     '{1:.1f}%'.format(scorecard.normalized(_final_eval('fast-double-dunk')[0], 'double_dunk'),
                       _atari5_with_human({game: 'fast-' + game.replace('_', '-') for game in (
                           'battle_zone', 'double_dunk', 'name_this_game', 'phoenix', 'qbert')},
                           'double_dunk'))),
]
