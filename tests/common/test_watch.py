"""common.watch renders a trained policy playing to a GIF or MP4 of the game's raw screens, the
score drawn, optionally beside the network's input; bad input ends in one line."""
import dataclasses
import os
import shutil
import subprocess
import sys

import cv2
import numpy as np
from PIL import Image
import pytest

from common import evaluate
from common import watch
from common.envs import atari
from common.envs import gym as gym_envs
from common.launch import app
from common.run import checkpoint as checkpoint_lib
from common.system import errors

CARTPOLE_SCREEN = (400, 600)  # gymnasium's CartPole rgb_array render, (height, width)


def _command(args, cwd):
    return subprocess.run([sys.executable, '-m', 'common.watch'] + args, cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=app.PROJECT_ROOT),
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_the_command_writes_a_gif_of_the_raw_cartpole_screens(cartpole_run, tmp_path):
    out = tmp_path / 'cartpole.gif'
    result = _command([f'--run_dir={cartpole_run}', f'--out={out}'], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f'wrote {out}: policy at step 256; score ' in result.stdout
    with Image.open(out) as gif:
        assert gif.n_frames > 1
        assert (gif.height, gif.width) == CARTPOLE_SCREEN  # the screen, not the 4-vector
        assert gif.info['loop'] == 0 and gif.info['duration'] == 20  # CartPole's 50 fps
        first = np.asarray(gif.convert('RGB'))
    assert (first[:50, -50:] == 255).all()  # CartPole's white sky, as rendered
    # The score in white on a black box, bottom left.
    assert (first[-8:, :2] == 0).all() and (first[-12:, :80] == 255).any()


@pytest.mark.slow
def test_a_pong_episode_is_drawn_from_the_ale_screen_beside_the_network_input(pong_run,
                                                                              tmp_path):
    env_config, policy, _ = evaluate.load_policy(pong_run)
    recorder, scores, steps, cut = watch.play(env_config, policy, max_steps=30,
                                              side_by_side=True, seed=3)
    assert steps == [30] and cut == [True] and scores == [0.0]
    assert recorder.stride == 1 and len(recorder.frames) == 31  # the reset's frame, then 30
    # The left part is the ALE's RGB screen itself (the caption covers its bottom rows); the
    # right, the 104x80x4 observation's frames tiled 2x2 and upscaled to the screen's height.
    env = watch.make_env(watch.watch_env_config(env_config), seed=3)
    observation = env.reset()
    screen = env.rgb_frame()
    assert screen.shape == atari.RAW_SCREEN_SHAPE + (3,) and screen.dtype == np.uint8
    first = recorder.frames[0]
    panel = watch.observation_image(observation, 210)
    assert panel.shape == (210, 162, 3)  # 208x160 tiles, nearest-upscaled to 210 rows
    assert first.shape == (210, 160 + 162, 3)
    np.testing.assert_array_equal(first[:180, :160], screen[:180])
    np.testing.assert_array_equal(first[:, 160:], panel)

    out = watch.write_animation(recorder.frames, str(tmp_path / 'pong.gif'),
                                watch.frames_per_second(env_config))
    with Image.open(out) as gif:
        assert gif.n_frames == 31 and gif.size == (322, 210)
        assert gif.info['duration'] == 70  # 15 agent steps per second, in GIF hundredths


def test_the_network_input_is_its_stacked_frames_tiled_oldest_first():
    observation = np.stack([np.full((2, 3), value, np.uint8) for value in (10, 20, 30, 40)],
                           axis=-1)
    image = watch.observation_image(observation, height=8)  # 4x6 tiles, twice the size
    assert image.shape == (8, 12, 3)
    assert (image[..., 0] == image[..., 2]).all()  # gray
    tiles = [image[:4, :6, 0], image[:4, 6:, 0], image[4:, :6, 0], image[4:, 6:, 0]]
    assert [np.unique(tile).tolist() for tile in tiles] == [[10], [20], [30], [40]]


def test_a_long_episode_keeps_at_most_max_frames_evenly_spaced_and_its_last():
    recorder = watch.FrameRecorder(max_frames=10)
    for index in range(1000):
        recorder.offer(lambda index=index: index)
    assert recorder.stride == 128 and recorder.frames == list(range(0, 1000, 128))
    # An episode's final frame (its final score) is kept: in place of its newest kept one.
    for max_frames in (9, 10):
        recorder = watch.FrameRecorder(max_frames)
        for episode, length in enumerate((37, 5, 17)):
            recorder.start_episode()
            for step in range(length + 1):
                recorder.offer(lambda episode=episode, step=step: (episode, step),
                               final=step == length)
        assert len(recorder.frames) <= max_frames and recorder.stride == 8
        assert recorder.frames[0] == (0, 0) and recorder.frames[-1] == (2, 17)
    with pytest.raises(ValueError, match='max_frames=1'):
        watch.FrameRecorder(max_frames=1)


def test_an_mp4_holds_the_same_frames(cartpole_run, tmp_path):
    # CartPole's pole cannot fall within 5 steps: two whole 5-step stretches, cut.
    summary = watch.watch(cartpole_run, str(tmp_path / 'cartpole.mp4'), episodes=2,
                          max_steps=5)
    assert summary['steps'] == [5, 5] and summary['cut'] == [True, True]
    assert summary['frames'] == 12
    assert summary['frame_shape'] == CARTPOLE_SCREEN + (3,)
    video = cv2.VideoCapture(summary['path'])
    frames = 0
    while video.read()[0]:
        frames += 1
    assert frames == 12
    assert int(video.get(cv2.CAP_PROP_FRAME_WIDTH)) == 600
    assert int(video.get(cv2.CAP_PROP_FRAME_HEIGHT)) == 400


def test_a_gym_env_draws_only_if_made_to():
    env = gym_envs.GymEnv(gym_envs.GymConfig('CartPole-v1'), seed=0)
    env.reset()
    with pytest.raises(ValueError, match='rgb_frames=True'):
        env.rgb_frame()
    env = gym_envs.GymEnv(gym_envs.GymConfig('CartPole-v1'), seed=0, rgb_frames=True)
    env.reset()
    assert env.rgb_frame().shape == CARTPOLE_SCREEN + (3,)


@pytest.mark.slow
def test_bad_input_is_refused_in_one_line(cartpole_run, tmp_path):
    with pytest.raises(errors.ConfigError, match=r"--out='x.avi'; allowed: .*\.gif"):
        watch.watch(cartpole_run, 'x.avi')
    with pytest.raises(errors.ConfigError, match='--episodes=0; must be an int > 0'):
        watch.watch(cartpole_run, episodes=0)
    # CartPole observes a 4-vector: there is no picture of what the network sees.
    with pytest.raises(errors.ConfigError, match=r'--side_by_side .* shape \(4,\) of float32'):
        watch.play(gym_envs.GymConfig('CartPole-v1'), lambda batch: [0], side_by_side=True)
    # A run directory whose checkpoints are gone (a published run without weights, too).
    no_checkpoint = tmp_path / 'no_checkpoint'
    shutil.copytree(cartpole_run, no_checkpoint,
                    ignore=shutil.ignore_patterns(checkpoint_lib.CHECKPOINT_DIR, 'run.lock'))
    result = _command([f'--run_dir={no_checkpoint}'], tmp_path)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: '{no_checkpoint}' has no checkpoint") and 'allowed' in line
    assert not (no_checkpoint / watch.DEFAULT_OUT).exists()


def test_watching_starts_a_whole_game_from_its_first_frame():
    config = atari.AtariConfig(variant='stooke', episodic_life=True, max_episode_steps=27000,
                               life_loss_restarts_stack=True)
    watched = watch.watch_env_config(config)
    watched.validate()  # the life-loss options go with episodic_life
    assert watched == dataclasses.replace(config, episodic_life=False, noop_max=30,
                                          decorrelation_steps=0, max_episode_steps=0,
                                          life_loss_restarts_stack=False)
