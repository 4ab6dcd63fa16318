"""A spawned worker's first module: processes.start_process names it as the parent's __main__,
so multiprocessing runs it in the child (as __mp_main__) before it unpickles the worker's
target, whose imports may load TensorFlow. It applies the parent's choices, inherited through the
environment: the GPUs this child may see (processes.start_process's gpus; common/system/devices.py)
and a quiet TensorFlow import. No TensorFlow here."""
from common.system import devices
from common.system import quiet_import

if __name__ == '__mp_main__':
    devices.apply_child_gpus()
    quiet_import.configure()
