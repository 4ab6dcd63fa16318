"""Shared layer of the four papers: environments, pools, networks, losses, run infrastructure.

tf-agents needs the legacy (tf-keras) Keras, so the switch is set here, before any module of
this package can import TensorFlow.
"""
import os

os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')
# TensorFlow's C++ start-up chatter (oneDNN, CUDA probing) drowns the progress line.
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
