"""Shared layer of the four papers: environments, pools, networks, losses, run infrastructure.

Importing it changes nothing in the process: the entry points set the process up first
(common/launch/process_setup.py).
"""
