"""`python -m common.suite --gin_file=PRESET --games=breakout,seaquest,qbert --steps=N`: one
preset over a list of games, one game after another.

Each game is an ordinary run directory, SUITE_DIR/<game>, trained by the preset's own paper
(`python -m <paper>_tf.main ... --gin_bindings="AtariConfig.game = '<game>'" --stop_at_steps=N`,
its output prefixed with the game and its place in the suite); then its final policy plays the
preset's evaluation protocol (its paper's, e.g. PAAC's 30 games of up to 108,000 frames;
common/envs/eval_protocols.py, common.evaluate), or --eval_protocol, --eval_episodes and
--eval_max_frames over it, appended to that run's eval.csv. After each game SUITE_DIR/suite.md and
suite.csv hold the table (common/tools/suite_table.py): steps, final training mean, evaluation,
random and human scores (Mnih et al. (2015)'s for their 49 games, Badia et al. (2020)'s for the 8
others of the 57), the human-normalized score and the paper's own score, the median and mean
normalized score, and, for a suite that holds Battle Zone, Double Dunk, Name This Game, Phoenix and
Q*Bert, the Atari-5 estimate of the 57-game median (Aitchison, Sweetser & Hutter 2023;
common/tools/atari5.py; Atari-3 and Atari-10 likewise). Rerunning the same command skips finished
games and resumes the unfinished one from its checkpoint; on another machine, the same command
with --resume_from=FOLDER (the unfinished game carried there, common.carry) goes on with it.
Every game is configured before any trains, so an unknown game, a budget of 0, another paper's
preset or a carry of another game is refused in one line before anything starts.
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import json
import os

from absl import flags

from common.envs import eval_protocols
from common.launch import app
from common.run import published
from common.run import run_record
from common.system import checks
from common.system import errors
from common.system import file_writes
from common.tools import child_runs
from common.tools import near_random
from common.tools import presets
from common.tools import reference_scores
from common.tools import suite_table

FLAGS = flags.FLAGS
flags.DEFINE_list('games', None, 'ale_py ROM ids of the games, in the order they run, e.g. '
                  'breakout,seaquest,qbert (each needs random and human scores: '
                  'common/tools/atari_scores.csv, else common/tools/atari57_scores.csv); '
                  'battle_zone,double_dunk,name_this_game,phoenix,qbert give the Atari-5 '
                  'estimate.')
flags.DEFINE_integer('steps', None, 'Env steps per game (--stop_at_steps of each run; the '
                     "preset's schedules still run over its total_steps).")
flags.DEFINE_string('suite_dir', None, 'Where the games\' run directories go. Default: '
                    'runs/suite-<paper>-<name of the last gin file>.')
flags.DEFINE_string('paper', None, 'The paper the preset must configure (default: the one it '
                    'binds the config of).')
flags.DEFINE_string('eval_protocol', None, 'Evaluation protocol of the final policies ('
                    f"{', '.join(eval_protocols.PROTOCOLS)}); default: the preset's.")
flags.DEFINE_integer('eval_episodes', None, "Episodes of the final evaluation of each game; "
                     "default: the protocol's.")
flags.DEFINE_integer('eval_max_frames', None, "Cap of each evaluation episode in emulator "
                     "frames; default: the protocol's.")
flags.DEFINE_string('resume_from', None, 'A game of this suite carried from another machine '
                    '(python -m common.carry SUITE_DIR/GAME FOLDER): that game goes on from '
                    'FOLDER in SUITE_DIR/GAME, as its paper\'s --resume_from does.')

SUITE_FILE = 'suite.json'


def check_flags():
    """The games (lower case, in order) and the budget, or ConfigError in one line."""
    checks.require(FLAGS.gin_file, '--gin_file is required: a paper preset, e.g. '
                   'gin/paac/pong.gin')
    checks.require(FLAGS.games, '--games is required: ale_py ROM ids, e.g. breakout,seaquest')
    games = [game.strip().lower() for game in FLAGS.games]
    repeated = sorted({game for game in games if games.count(game) > 1})
    checks.require(not repeated, f'--games names {", ".join(repeated)} more than once')
    checks.require(FLAGS.steps is not None and FLAGS.steps > 0,
                   f'--steps={FLAGS.steps!r}: give a positive number of env steps per game')
    for name in ('eval_episodes', 'eval_max_frames'):
        checks.require(getattr(FLAGS, name) is None or getattr(FLAGS, name) > 0,
                       f'--{name}={getattr(FLAGS, name)}: must be a positive integer')
    checks.require(FLAGS.eval_protocol in (None,) + tuple(eval_protocols.PROTOCOLS),
                   f'--eval_protocol={FLAGS.eval_protocol!r}; allowed: '
                   f"{', '.join(eval_protocols.PROTOCOLS)}")
    for game in games:
        reference_scores.random_human_and_source(game)  # ConfigError naming one without
    return games


def plan(games):
    """(paper, suite_dir, {game: its config}) with every game configured, before anything
    starts; ConfigError in one line otherwise."""
    paper, main = presets.paper_of(FLAGS.gin_file, FLAGS.gin_bindings, FLAGS.paper)
    configs = {game: presets.configure_game(main, FLAGS.gin_file, FLAGS.gin_bindings, game)
               for game in games}
    for config in configs.values():
        checks.require(FLAGS.steps <= config.total_steps,
                       f'--steps={FLAGS.steps:,} is past the preset\'s total_steps='
                       f'{config.total_steps:,}; bind {type(config).__name__}.total_steps higher')
    stem = os.path.splitext(os.path.basename(FLAGS.gin_file[-1]))[0]
    return paper, FLAGS.suite_dir or os.path.join('runs', f'suite-{paper}-{stem}'), configs


def carried_game(folder, paper, games):
    """The game of the run carried in folder (common.carry) that this suite goes on with;
    ConfigError in one line when folder is no carry, or carries another paper's run or a game
    not in games. The child checks the rest (files, network) before it writes anything."""
    checks.require(published.is_carry(folder), f'--resume_from={folder!r} is not a carried run '
                   '(no carry.json; python -m common.carry SUITE_DIR/GAME FOLDER writes one)')
    try:
        with open(os.path.join(folder, app.RUN_FILE)) as f:
            recorded = run_record.identity_of(json.load(f))
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise errors.ConfigError(f'--resume_from={folder!r}: its {app.RUN_FILE} cannot be read '
                                 f'({error})') from None
    there, game = recorded.get('paper'), recorded.get('env')
    checks.require(there == paper, f'--resume_from={folder!r} carries a {there} run; this '
                   f"suite's preset configures {paper}")
    checks.require(game in games, f'--resume_from={folder!r} carries {game!r}, not a game of '
                   f'--games ({",".join(games)})')
    return game


def _choice():
    return eval_protocols.Choice(FLAGS.eval_protocol, FLAGS.eval_episodes, FLAGS.eval_max_frames)


def protocol_text(config):
    """The evaluation protocol the suite plays on config's runs, as one line."""
    protocol = _choice().apply(config.evaluation_protocol())
    return protocol.describe(getattr(config.env_config, 'frame_skip', None))


def evaluate_game(run_dir):
    """The evaluation protocol on run_dir's final policy, appended to its eval.csv; the row."""
    from common import evaluate  # pylint: disable=import-outside-toplevel (TensorFlow)
    row, _ = evaluate.evaluate_run(run_dir, num_episodes=FLAGS.eval_episodes,
                                   protocol=FLAGS.eval_protocol, max_frames=FLAGS.eval_max_frames)
    return row


def main():
    games = check_flags()
    paper, suite_dir, configs = plan(games)
    carried = carried_game(FLAGS.resume_from, paper, games) if FLAGS.resume_from else None
    record, record_path = child_runs.open_record(
        suite_dir, SUITE_FILE, {'paper': paper, 'gin_files': list(FLAGS.gin_file),
                                'gin_bindings': list(FLAGS.gin_bindings)}, '--suite_dir')
    record.setdefault('games', {})
    bindings = ''.join(f'\n- `{binding}`' for binding in FLAGS.gin_bindings)
    heading = (f'# Suite: {paper}, {FLAGS.steps:,} steps per game\n\n'
               f'Preset: {", ".join(f"`{path}`" for path in FLAGS.gin_file)}'
               + (f', with{bindings}' if bindings else ''))
    protocol = protocol_text(configs[games[0]])
    for index, game in enumerate(games, 1):
        tag, run_dir = f'[{index}/{len(games)} {game}]', os.path.join(suite_dir, game)
        target = min(FLAGS.steps, configs[game].total_steps)
        done = record['games'].get(game, {}).get('evaluation')
        steps = child_runs.checkpoint_steps(run_dir)
        if done and steps >= target and int(done['env_steps']) == steps:
            print(f'{tag} done: {steps:,} steps, evaluated {float(done["score_mean"]):.1f}; '
                  'skipped', flush=True)
            continue
        if steps < target:
            print(f'{tag} game {index} of {len(games)}: training to {target:,} steps in '
                  f'{run_dir}' + (f' (resuming at {steps:,})' if steps else ''), flush=True)
            child_runs.train_in_turn(
                paper, FLAGS.gin_file, list(FLAGS.gin_bindings) + [presets.game_binding(game)],
                run_dir, target, tag, ('game', index, len(games), game),
                [f'--resume_from={FLAGS.resume_from}'] if game == carried else [],
                near_random.HalfwayLook(game, target, run_dir, tag))
        print(f'{tag} evaluating the final policy ({protocol})', flush=True)
        evaluation = evaluate_game(run_dir)
        record['games'][game] = {'run_dir': run_dir, 'evaluation': evaluation}
        file_writes.write_json(record_path, record)
        print(f'{tag} evaluation: mean {evaluation["score_mean"]:.1f} (std '
              f'{evaluation["score_std"]:.1f}) over {evaluation["episodes"]} episodes; '
              f'normalized {_normalized(evaluation["score_mean"], game):.1f}', flush=True)
        write_table(suite_dir, games, record, paper, heading, protocol)
    for path in write_table(suite_dir, games, record, paper, heading, protocol):
        print(f'wrote {path}')
    return 0


def _normalized(score, game):
    random, human, _ = reference_scores.random_human_and_source(game)
    return 100.0 * (score - random) / (human - random)


def write_table(suite_dir, games, record, paper, heading, protocol):
    """suite.md and suite.csv of the games of this command that have a run directory."""
    rows = [suite_table.game_row(os.path.join(suite_dir, game), game,
                                 record['games'].get(game, {}).get('evaluation'), paper)
            for game in games if os.path.isdir(os.path.join(suite_dir, game))]
    return suite_table.write(suite_dir, rows, heading, protocol)


if __name__ == '__main__':
    app.execute(main)
