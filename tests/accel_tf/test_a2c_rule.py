"""The A2C preset's learning rate at 512 simulators is what its gin comment says: the square-root
rule of Stooke & Abbeel (section 4.2) from 7e-4 at 16, not App. A.3's rounded "3 x 10^-3"."""
import os
import re

from accel_tf import main as accel_main
from common.launch import app

PRESET = os.path.join(app.PROJECT_ROOT, 'gin', 'accel', 'a2c_pong.gin')


def test_the_rate_at_512_simulators_is_the_one_the_comment_names():
    config = accel_main.configure([PRESET], ['AccelConfig.envs_per_worker = 256'])
    assert config.num_envs == 512
    with open(PRESET) as f:
        comment = re.search(r'= ([0-9.]+)e-3 at\s*\n?\s*#?\s*512 simulators', f.read())
    assert comment, 'the preset no longer names its rate at 512 simulators'
    assert f'{config.scaled_learning_rate * 1e3:.2f}' == comment.group(1)
    base = accel_main.configure([PRESET], [])
    assert base.num_envs == 16 and abs(base.scaled_learning_rate - 7e-4) < 1e-12
