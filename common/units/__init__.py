"""What one step of training is, per kind, for the run call to drive: the on-policy and
off-policy units, the asynchronous learners and their parameter store, and the samplers they step
environments with."""
