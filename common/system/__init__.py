"""The bottom floor: what every other folder of common/ stands on and no run depends on: errors and
value checks, gin text, file writes, processes, shared memory, devices, the machine's load and
the quiet import of TensorFlow. Imports nothing of common/ above it."""
