"""Benchmarks: scripts that print ratios measured in one run, never timed tests.

    python -m labs.bench               # = ring
    python -m labs.bench ring          # the course's ring all-reduces vs dist.all_reduce
    python -m labs.bench launch        # launch start-up: forkserver (the course) vs spawn
    python -m labs.bench algorithms    # lesson 10's all-reduces and best_all_reduce vs gloo

They sit above the lessons they measure (labs.ring, labs.algorithms, labs.welcome), one
benchmark per file: launch_time, ring, algorithms; `command` reads the command line.
"""
from labs.bench.command import main

__all__ = ["main"]
