"""Shared layer of the four papers: environments, pools, networks, losses, run infrastructure.

tf-agents needs the legacy (tf-keras) Keras, so the switch is set here, before any module of
this package can import TensorFlow.
"""
import os

os.environ.setdefault('TF_USE_LEGACY_KERAS', '1')
# TensorFlow's C++ start-up chatter (oneDNN, CUDA probing) drowns the progress line: silenced
# unless the user sets TF_CPP_MIN_LOG_LEVEL or passes --verbose.
from common.run import quiet_import  # noqa: E402  (no TensorFlow in it)

quiet_import.configure()
# TensorFlow turns its oneDNN CPU kernels on by default only on CPUs with AVX-512 VNNI/BF16 or
# AMX. Without them (AVX2-only CPUs, e.g. this project's AMD EPYC machines) the stock kernels
# take about twice as long for the papers' update steps (the backward pass of the 8x8/4 first
# convolution alone: 9.4 ms against 1.8 ms). Set TF_ENABLE_ONEDNN_OPTS=0 to get them back.
os.environ.setdefault('TF_ENABLE_ONEDNN_OPTS', '1')
