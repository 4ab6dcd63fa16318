"""What a process that runs this project does before TensorFlow loads: every entry point calls
configure() first, so that `import common` itself changes nothing in a library user's process.

Set here: the legacy Keras switch (tf-agents, the tests' oracle and a bench peer, reads
tf.keras and needs tf-keras, which this package's networks import directly), TensorFlow's
oneDNN CPU kernels, GPU memory growth (common/system/devices.py), and the quiet import of
TensorFlow (unless --verbose or TF_CPP_MIN_LOG_LEVEL=0). The environment variables reach the
worker processes a run spawns; the quiet import is installed in them by
common/system/child_setup.py. No TensorFlow here.
"""
import os
import sys

from common.system import devices
from common.system import quiet_import

__all__ = ('configure',)


def configure(environ=os.environ, argv=sys.argv):
    """Sets the process up; call it before anything imports TensorFlow."""
    environ.setdefault('TF_USE_LEGACY_KERAS', '1')
    # TensorFlow turns its oneDNN CPU kernels on by default only on CPUs with AVX-512 VNNI/BF16
    # or AMX. Without them (AVX2-only CPUs, e.g. this project's AMD EPYC machines) the stock
    # kernels take about twice as long for the papers' update steps (the backward pass of the
    # 8x8/4 first convolution alone: 9.4 ms against 1.8 ms). TF_ENABLE_ONEDNN_OPTS=0 opts out.
    environ.setdefault('TF_ENABLE_ONEDNN_OPTS', '1')
    # Every TensorFlow process of a run takes GPU memory as it needs it, not all at its first op.
    devices.configure_environment(environ)
    # TensorFlow's C++ start-up chatter (oneDNN, CUDA probing) drowns the progress line.
    quiet_import.configure(environ, argv)
