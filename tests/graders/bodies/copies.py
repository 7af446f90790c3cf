"""The reference solutions as a learner's own code, for the bodies here that are built on them.

A grader refuses a body whose communication comes from the exercise's reference (a learner
who calls solutions/ did not write the method). A body here that changes one thing of the
reference, to prove that a grader catches that one thing, runs a copy instead: each module
of solutions/, compiled again under a file name of this folder, so its code is not the
reference's code and the failure is the one the body is about.
"""
import types
from pathlib import Path

_SOLUTIONS = Path(__file__).resolve().parents[3] / "solutions"


def _copy(name: str) -> types.ModuleType:
    module = types.ModuleType(f"{__name__}.{name}")
    module.__file__ = str(Path(__file__).with_name(f"copy_of_{name}.py"))
    source = (_SOLUTIONS / f"{name}.py").read_text()
    exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102
    return module


algorithms, batching, collectives, deadlocks, gradients, p2p, patterns, ring, waiting = map(
    _copy, ["algorithms", "batching", "collectives", "deadlocks", "gradients", "p2p",
            "patterns", "ring", "waiting"])
