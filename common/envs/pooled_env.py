"""PooledEnv: one environment of a ProcessPool behind the single-environment API (reset, step,
episode_return, episode_length, close), so that a thread stepping it waits on a pipe, with the
GIL released, while its worker process emulates: threads that each own one then emulate side by
side, which threads stepping ale_py in-process cannot (ale_py holds the GIL while it emulates).
"""
import numpy as np

from common.envs import process_pool


def pooled_envs(env_config, num_envs: int, seed: int = 0):
    """A ProcessPool of num_envs worker processes, one env each (env i seeded seed + i, as
    env_config.make(seed + i) would be), reset, and a PooledEnv for each; close the pool when
    done (PooledEnv.close does not)."""
    pool = process_pool.ProcessPool(env_config, num_envs, num_workers=num_envs, seed=seed,
                                    num_groups=num_envs)
    try:
        observations = pool.reset()
        return pool, [PooledEnv(pool, index, observations[index]) for index in range(num_envs)]
    except BaseException:
        pool.close()
        raise


class PooledEnv:
    """Env `index` of `pool`, which runs one env per group and has been reset (`observation`:
    that env's row of the reset's observations). The pool resets
    an env when its episode ends, so reset() returns the observation the env is at: the first
    one of the pool's reset, or of the episode that began at the last done."""

    def __init__(self, pool, index: int, observation: np.ndarray):
        self.pool = pool
        self.index = index
        self._action = np.zeros(1, np.int32)
        self._observation = observation
        self.episode_return = 0.0
        self.episode_length = 0

    def reset(self) -> np.ndarray:
        return self._observation

    def step(self, action):
        """(observation, reward, terminal, done) like the in-process envs' step; after a done the
        observation is the next episode's first (the in-process env's comes from reset())."""
        self._action[0] = action
        self.pool.step_async(self._action, self.index)
        result = self.pool.step_wait(self.index)
        self._observation = result.observations[0]
        done = bool(result.dones[0])
        if done:
            self.episode_return = float(result.episode_returns[0])
            self.episode_length = int(result.episode_lengths[0])
        return self._observation, float(result.rewards[0]), bool(result.terminals[0]), done

    def close(self) -> None:
        """Nothing: the pool is shared and its owner closes it."""
