"""XLA for the learners' hot paths (RunConfig.jit_compile): each network call of acting,
predicting and every update runs as one XLA-compiled function, and its gradient too; so do the
scans over time of a rollout's returns and advantages (A2C, PAAC, PPO).

Only those are compiled, not the whole tf.functions around them: XLA draws other random numbers
than TensorFlow from the same tf.random.Generator state, so acting (Gumbel-max sampling) and
PPO's minibatch shuffles would change; the optimizer's elementwise steps and the losses' few ops
gain little; and GA3C's returns lay sequences out in a shape that depends on the values, which
XLA cannot compile. So a run with jit_compile takes the same actions and reaches the
same weights as one without, to float tolerance (tests/common/learners/test_xla.py). Whether it is
faster depends on the device: `python -m common.bench --rows=paac,paac/xla,...` measures it.
"""
import tensorflow as tf

__all__ = ('compiled_call',)


def compiled_call(call, jit_compile):
    """call (a network call or a scan: tensors in, tensors out, no random draws) as an XLA-compiled
    tf.function if jit_compile, else call itself. Called inside the learners' tf.functions,
    whose signatures leave the batch dimension open: XLA compiles once per batch size seen."""
    if not jit_compile:
        return call
    return tf.function(call, jit_compile=True, autograph=False)
