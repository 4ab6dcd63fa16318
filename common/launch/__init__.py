"""The entry floor: flags and gin, the run directory, the shared config fields, process set-up,
the registry of papers and the entry point every paper's main calls; above units, scale and envs."""
