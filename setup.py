"""Installs the shared layer (common) and the paper packages; tf-agents, the tests' oracle and the
bench's peer row, is an extra ('test', 'peers'), so it pins nothing of the core install."""
import setuptools

# The ranges the code needs. TensorFlow and tf-keras move together (tf-keras 2.21 requires
# tensorflow 2.21.*; Keras 2 by its own name); TF 2.21 no longer pulls tensorboard, which reads
# the runs' events. numpy from TF 2.21's floor; numpy 2 and opencv >= 4.12 (which requires it)
# install with the core set. ale-py 0.12: ALEInterface and the native vector env as used here.
INSTALL_REQUIRES = [
    'tensorflow~=2.21.0',
    'tf-keras~=2.21.0',
    'tensorboard>=2.21,<3',
    'numpy>=1.26,<3',
    'gymnasium>=1.0,<2',
    'ale-py~=0.12.1',
    'opencv-python-headless>=4.11.0.86,<5',
    'absl-py>=2.0,<3',
    'gin-config~=0.5.0',
    'matplotlib>=3.8,<4',  # common.compare --plot (Agg backend, no display)
]

# tf-agents 0.19 pins typing-extensions 4.5.0 (so gymnasium resolves to 1.3.0, not 1.4), wants
# tensorflow-probability 0.23, and its uint8 specs break under numpy 2 (so opencv < 4.12).
TF_AGENTS = ['tf-agents==0.19.0', 'tensorflow-probability==0.23.0', 'numpy<2']

setuptools.setup(
    name='fast-rl-tf',
    version='0.1.0',
    description='TensorFlow 2 implementations of GA3C, PAAC, fast DQN and accelerated RL methods',
    python_requires='>=3.11',
    packages=setuptools.find_packages(include=['common', 'common.*', 'paac_tf', 'paac_tf.*',
                                               'ga3c_tf', 'ga3c_tf.*', 'dqn_tf', 'dqn_tf.*',
                                               'accel_tf', 'accel_tf.*']),
    package_data={'common': ['tools/*.csv'], 'paac_tf': ['*.csv'], 'ga3c_tf': ['*.csv'],
                  'dqn_tf': ['*.csv']},
    install_requires=INSTALL_REQUIRES,
    # 'peers': the bench's peer/tf_agents_ppo row. 'test': tf-agents as the tests' oracle, and
    # pytest-xdist: the suite runs on 2 workers (README's test command); one alone leaves a
    # core idle while tests wait on subprocesses' start-up and endings. 'gpu': TensorFlow with
    # the CUDA 12 and cuDNN 9 libraries it loads (nvidia-*-cu12 wheels), pinned to the version
    # this code runs on; without them a GPU machine's TensorFlow registers no GPU (docs/gpu.md).
    extras_require={'peers': TF_AGENTS,
                    'test': TF_AGENTS + ['pytest==9.0.3', 'pytest-xdist==3.6.1'],
                    'gpu': ['tensorflow[and-cuda]==2.21.0']},
)
