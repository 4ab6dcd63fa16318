"""The ground floor: a run's records and its one loop (runner and tracker), checkpoints, metrics,
the run lock and record, errors and value checks, processes, shared memory and devices; every
other folder of common/ stands on it."""
