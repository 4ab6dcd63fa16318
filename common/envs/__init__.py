"""Environments (one Atari game, any gymnasium env) and the pools that step them in batches.

Nothing here imports TensorFlow: worker processes import this package and must stay light.
"""
from common.envs.ale_vector import AleVectorPool
from common.envs.atari import AtariConfig, AtariEnv
from common.envs.gym import GymConfig, GymEnv
from common.envs.pool_base import EnvPool, StepResult
from common.envs.pools import (POOL_KINDS, ProcessPool, SerialPool, ThreadPool, make_pool,
                               validate_pool_config)
