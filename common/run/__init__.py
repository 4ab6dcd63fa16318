"""The run floor: a run's one loop (runner and tracker) and the files a run writes (checkpoints,
metrics, the run lock and record, its carry, the operative config, what a resume supersedes,
which folders are published records). Beside envs/, scale/ and replay/, on common/system/."""
