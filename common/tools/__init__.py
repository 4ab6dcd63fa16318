"""What the commands (bench, compare, evaluate, results) are built from: run files, the
run clock, plots, reproduction checks, timing."""
