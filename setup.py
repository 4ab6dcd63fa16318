"""Installs the shared layer (common) and the paper packages with the pinned dependency set."""
import setuptools

# Pinned as measured to install together:
# numpy 2 breaks tf-agents' uint8 specs, opencv >= 4.12 pulls numpy 2, tf-agents pins
# typing-extensions 4.5.0 (hence gymnasium 1.3.0), TF 2.21 no longer pulls tensorboard.
INSTALL_REQUIRES = [
    'tensorflow==2.21.0',
    'tf-keras==2.21.0',
    'tensorflow-probability==0.23.0',
    'tf-agents==0.19.0',
    'tensorboard==2.21.0',
    'numpy==1.26.4',
    'typing-extensions==4.5.0',
    'gymnasium==1.3.0',
    'ale-py==0.12.1',
    'opencv-python-headless==4.11.0.86',
    'absl-py==2.5.1',
    'gin-config==0.5.0',
    'matplotlib==3.10.3',  # common.compare --plot (Agg backend, no display)
]

setuptools.setup(
    name='fast-rl-tf',
    version='0.1.0',
    description='TensorFlow 2 implementations of GA3C, PAAC, fast DQN and accelerated RL methods',
    python_requires='>=3.11',
    packages=setuptools.find_packages(include=['common', 'common.*', 'paac_tf', 'paac_tf.*',
                                               'ga3c_tf', 'ga3c_tf.*', 'dqn_tf', 'dqn_tf.*',
                                               'accel_tf', 'accel_tf.*']),
    install_requires=INSTALL_REQUIRES,
    # pytest-xdist: the suite runs on 2 workers (README's test command); one alone leaves a
    # core idle while tests wait on subprocesses' start-up and endings.
    extras_require={'test': ['pytest==9.0.3', 'pytest-xdist==3.6.1']},
)
