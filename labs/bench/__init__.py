"""The benchmarks, above the lessons they measure (labs.ring, labs.algorithms, labs.welcome):
one benchmark per file (launch_time, ring, algorithms), `command` reads the command line
(`python -m labs.bench ...`, its usage in labs/bench/command.py)."""
from labs.bench.command import main

__all__ = ["main"]
