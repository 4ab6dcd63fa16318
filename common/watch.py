"""`python -m common.watch --run_dir=RUN [--out=FILE.gif] [--episodes=1] [--max_steps=N]
[--side_by_side]`: a trained policy playing, as an animated GIF (or an MP4).

The policy is loaded as common.evaluate loads it (a run directory's newest checkpoint, or a
published result's policy weights), and plays whole games (no episodic life) from the no-op starts
of the run's evaluation protocol, acting as it does. The frames are the game's own screens (the
ALE's RGB screen, gymnasium's rgb_array render), not the network's input, with the episode's score
drawn in a corner; --side_by_side puts the network's input beside each (its stacked frames tiled,
oldest first, upscaled to the screen's height). At most --max_frames frames are kept, spread evenly
over the episodes, so a long game costs a bounded GIF.
"""
from common.launch import process_setup  # first: the process set-up before TensorFlow loads
process_setup.configure()
# pylint: disable=wrong-import-position
import math
import os
import time

from absl import flags
import cv2
import numpy as np

from common import evaluate
from common.envs import atari
from common.envs import gym as gym_envs
from common.launch import app
from common.run import checkpoint as checkpoint_lib
from common.system import checks
from common.system import errors

FORMATS = ('.gif', '.mp4')
DEFAULT_OUT = 'watch.gif'
DEFAULT_MAX_STEPS = 5000  # agent steps per episode: over 5 minutes of Atari play at 15 Hz
DEFAULT_MAX_FRAMES = 400
CAPTION_HEIGHT = 12


class FrameRecorder:
    """Keeps every stride-th of the frames offered, at most max_frames: when full, every other
    kept frame goes and the stride doubles, so the frames stay evenly spaced in time. An
    episode's final frame (its final score) is kept whatever the stride: it takes the place of
    the episode's newest kept frame."""

    def __init__(self, max_frames):
        if max_frames < 2:
            raise ValueError(f'max_frames={max_frames}; must be >= 2')
        self.max_frames = max_frames
        self.frames = []
        self.indices = []  # the offer index of each kept frame
        self.stride = 1
        self.offered = 0
        self._episode_start = 0

    def start_episode(self):
        """Marks the next frame offered as an episode's first."""
        self._episode_start = self.offered

    def offer(self, draw, final=False):
        """Counts one frame; calls draw() -> the frame only if it is kept (final: the
        episode's last frame, always kept)."""
        index = self.offered
        self.offered += 1
        if final and index % self.stride and self.indices and \
                self.indices[-1] >= self._episode_start:
            self.frames[-1], self.indices[-1] = draw(), index
        elif final or index % self.stride == 0:
            self.frames.append(draw())
            self.indices.append(index)
            if len(self.frames) > self.max_frames:
                last = self.frames[-1], self.indices[-1]
                self.frames, self.indices = self.frames[::2], self.indices[::2]
                self.stride *= 2
                if final and self.indices[-1] != index:  # the final frame stays
                    self.frames[-1], self.indices[-1] = last


def make_env(env_config, seed):
    """One environment of env_config whose rgb_frame() is its raw screen."""
    if isinstance(env_config, atari.AtariConfig):
        return env_config.make(seed)
    if isinstance(env_config, gym_envs.GymConfig):
        # gymnasium draws with pygame, whose start-up would probe the sound card and greet.
        os.environ.setdefault('SDL_AUDIODRIVER', 'dummy')
        os.environ.setdefault('PYGAME_HIDE_SUPPORT_PROMPT', '1')
        return gym_envs.GymEnv(env_config, seed, rgb_frames=True)
    raise errors.ConfigError(f'cannot draw the screen of {env_config!r}; allowed: AtariConfig or '
                             'GymConfig runs')


def frames_per_second(env_config):
    """Agent steps per second of real play: the ALE runs at 60 Hz, one step per frame_skip
    frames; gymnasium envs declare theirs (metadata render_fps)."""
    if isinstance(env_config, atari.AtariConfig):
        return 60.0 / env_config.frame_skip
    import gymnasium  # pylint: disable=import-outside-toplevel
    env = gymnasium.make(env_config.env_id)
    try:
        return float(env.metadata.get('render_fps') or 30)
    finally:
        env.close()


def watch_env_config(env_config, noop_max=30):
    """The env config of an evaluation (whole games, 1..noop_max no-op starts) with no start-up
    decorrelation and no step cap of its own: the game is watched from its first frame, and
    play() cuts it at max_steps."""
    if isinstance(env_config, atari.AtariConfig):
        env_config = env_config.whole_games(noop_max=noop_max, max_episode_steps=0)
    return env_config


def observation_image(observation, height):
    """What the network sees as a grayscale RGB image of the given height: the stacked frames
    of an (H, W, stack) uint8 observation tiled row by row, oldest first, nearest-upscaled."""
    frame_height, frame_width, stack = observation.shape
    columns = math.ceil(math.sqrt(stack))
    rows = math.ceil(stack / columns)
    grid = np.zeros((rows * frame_height, columns * frame_width), np.uint8)
    for index in range(stack):
        row, column = divmod(index, columns)
        grid[row * frame_height:(row + 1) * frame_height,
             column * frame_width:(column + 1) * frame_width] = observation[..., index]
    width = max(1, round(grid.shape[1] * height / grid.shape[0]))
    grid = cv2.resize(grid, (width, height), interpolation=cv2.INTER_NEAREST)
    return np.repeat(grid[..., None], 3, axis=-1)


def draw_caption(frame, text):
    """frame with text in white on a black box in its bottom-left corner (the frame keeps its
    size)."""
    from PIL import Image, ImageDraw  # pylint: disable=import-outside-toplevel
    image = Image.fromarray(frame)
    draw = ImageDraw.Draw(image)
    left, top, right, bottom = draw.textbbox((0, 0), text)
    height = min(frame.shape[0], bottom - top + 3)
    y = frame.shape[0] - height
    draw.rectangle((0, y, min(frame.shape[1], right - left + 4) - 1, frame.shape[0] - 1),
                   fill=(0, 0, 0))
    draw.text((2 - left, y + 1 - top), text, fill=(255, 255, 255))
    return np.asarray(image)


def _frame(env, observation, caption, side_by_side):
    """The env's screen with the caption drawn, and beside it the observation if side_by_side."""
    screen = env.rgb_frame()
    frame = draw_caption(screen, caption)
    if side_by_side:
        frame = np.concatenate([frame, observation_image(observation, screen.shape[0])], axis=1)
    return frame


def _check_image_observations(env_config):
    shape, dtype = tuple(env_config.observation_shape), np.dtype(env_config.observation_dtype)
    if len(shape) != 3 or dtype != np.uint8:
        raise errors.ConfigError(f'--side_by_side shows image observations (height, width, stack) '
                                 f'of uint8; this run observes shape {shape} of {dtype}')


def play(env_config, policy_fn, episodes=1, max_steps=DEFAULT_MAX_STEPS,
         max_frames=DEFAULT_MAX_FRAMES, side_by_side=False, seed=12345):
    """Plays episodes with policy_fn (an observation batch -> actions) in one environment;
    returns (recorder, scores, steps, cut): the kept frames, each episode's score and steps,
    and whether each was cut at max_steps before its game ended."""
    if side_by_side:
        _check_image_observations(env_config)
    protocol = getattr(policy_fn, 'protocol', None)  # a restored run's: its no-op starts
    env = make_env(watch_env_config(env_config, getattr(protocol, 'noop_max', 30)), seed)
    recorder = FrameRecorder(max_frames)
    scores, steps, cut = [], [], []
    try:
        for episode in range(episodes):
            label = f'  episode {episode + 1}/{episodes}' if episodes > 1 else ''
            observation = env.reset()
            recorder.start_episode()
            step, done = 0, False
            while True:
                final = done or step >= max_steps
                # Called at once (when the frame is kept): the loop's current values.
                recorder.offer(lambda: _frame(  # pylint: disable=cell-var-from-loop
                    env, observation, f'score {env.episode_return:g}  step {step}{label}',
                    side_by_side), final)
                if final:
                    break
                action = int(np.asarray(policy_fn(observation[None]))[0])
                observation, _, _, done = env.step(action)
                step += 1
            scores.append(float(env.episode_return))
            steps.append(step)
            cut.append(not done)
    finally:
        env.close()
    return recorder, scores, steps, cut


def write_animation(frames, path, fps):
    """Writes the frames (each (H, W, 3) uint8, one size) as an animated GIF (looping) or an
    MP4 (by OpenCV), shown at fps frames per second; returns path."""
    extension = os.path.splitext(path)[1].lower()
    if extension not in FORMATS:
        raise errors.ConfigError(f'--out={path!r}; allowed: a file name ending in {FORMATS}')
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if extension == '.gif':
        from PIL import Image  # pylint: disable=import-outside-toplevel
        images = [Image.fromarray(frame) for frame in frames]
        # GIF delays are in hundredths of a second.
        images[0].save(path, save_all=True, append_images=images[1:], loop=0,
                       duration=max(20, int(round(100 / fps)) * 10))
        return path
    height, width = frames[0].shape[:2]
    writer = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*'mp4v'), fps, (width, height))
    if not writer.isOpened():
        raise errors.RunError(f'OpenCV cannot write an MP4 to {path}; write a .gif instead')
    try:
        for frame in frames:
            writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    finally:
        writer.release()
    return path


def watch(run_dir, out=None, episodes=1, max_steps=DEFAULT_MAX_STEPS,
          max_frames=DEFAULT_MAX_FRAMES, side_by_side=False, greedy=False, seed=12345):
    """Renders run_dir's policy playing episodes to out (default RUN/watch.gif, or
    ./NAME-watch.gif for a published result, which is not written to); returns a
    summary dict (path, scores, steps, cut, frames, stride, seconds)."""
    checks.require(isinstance(episodes, int) and episodes > 0,
                   f'--episodes={episodes!r}; must be an int > 0')
    checks.require(isinstance(max_steps, int) and max_steps > 0,
                   f'--max_steps={max_steps!r}; must be an int > 0')
    checks.require(isinstance(max_frames, int) and max_frames >= 2,
                   f'--max_frames={max_frames!r}; must be an int >= 2')
    checks.require(out is None or os.path.splitext(out)[1].lower() in FORMATS,
                   f'--out={out!r}; allowed: a file name ending in {FORMATS}')
    start = time.process_time()
    env_config, policy_fn, env_steps = evaluate.load_policy(run_dir, greedy=greedy)
    out = out or checkpoint_lib.output_path(run_dir, DEFAULT_OUT)
    recorder, scores, steps, cut = play(env_config, policy_fn, episodes, max_steps, max_frames,
                                        side_by_side, seed)
    write_animation(recorder.frames, out, frames_per_second(env_config) / recorder.stride)
    return {'path': out, 'env_steps': env_steps, 'scores': scores, 'steps': steps, 'cut': cut,
            'frames': len(recorder.frames), 'stride': recorder.stride,
            'frame_shape': recorder.frames[0].shape, 'cpu_seconds': time.process_time() - start}


def main():
    flags_ = flags.FLAGS
    if not flags_.run_dir:
        app.fail('--run_dir is required')
    summary = watch(flags_.run_dir, flags_.out, flags_.episodes, flags_.max_steps,
                    flags_.max_frames, flags_.side_by_side, flags_.greedy, flags_.seed)
    games = ', '.join(f'score {score:g} in {steps:,} steps' + (' (cut)' if cut else '')
                      for score, steps, cut in zip(summary['scores'], summary['steps'],
                                                   summary['cut']))
    every = f', every {summary["stride"]} steps' if summary['stride'] > 1 else ''
    print(f'wrote {summary["path"]}: policy at step {summary["env_steps"]:,}; {games}; '
          f'{summary["frames"]} frames{every}; {summary["cpu_seconds"]:.1f} s of CPU')


if __name__ == '__main__':
    flags.DEFINE_string('out', None, f'GIF or MP4 to write ({", ".join(FORMATS)}); default '
                        f'RUN_DIR/{DEFAULT_OUT}, or ./NAME-{DEFAULT_OUT} for a published result '
                        '(docs/results/NAME is not written to).')
    flags.DEFINE_integer('episodes', 1, 'Episodes to play, one after the other.')
    flags.DEFINE_integer('max_steps', DEFAULT_MAX_STEPS, 'Agent steps per episode at most.')
    flags.DEFINE_integer('max_frames', DEFAULT_MAX_FRAMES,
                         'Frames kept at most, evenly spaced (a longer game keeps every 2nd, '
                         '4th, ... step).')
    flags.DEFINE_boolean('side_by_side', False,
                         "Put the network's input (its stacked frames, upscaled) beside each "
                         'screen; image observations only.')
    flags.DEFINE_boolean('greedy', False, 'Act greedily: epsilon 0 for a Q-value policy, argmax '
                         "pi for an actor-critic's (instead of the run's evaluation protocol's "
                         'epsilon, or actions drawn from pi).')
    flags.DEFINE_integer('seed', 12345, 'Seed of the environment.')
    app.execute(main)
