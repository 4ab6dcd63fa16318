"""A run's lifecycle: entry point, flags and config, run directory, the one training loop
(runner) and its tracker, checkpoints, metrics, processes and shared memory."""
