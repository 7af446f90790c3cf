"""The ledger's registry: every claim by a stable id, and how one is checked.

A claim is a function with no arguments that runs real gloo workers and returns a
`ClaimResult`. Registering it:

    @claim(lesson="03", text="a barrier does not complete point-to-point work")
    def barrier_does_not_complete_p2p():
        ...
        return ClaimResult(holds=..., observed="...")

Its id is the function's name. `observed` is short and the same on every run (no timings,
pids, ports or paths), so a notebook cell that prints it passes strict nbval.

NCCL claims cannot run on a CPU. They are registered with `nccl_claim(lesson, text, source)`:
labelled "NCCL, not run here" wherever they are shown, with the public source that states
them (the table lists them as `sourced`, never as `holds`).
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from typing import Callable

from labs.harness.once import once
from labs.harness.ranks.exercises import SOLUTIONS_ENV


@dataclass(frozen=True)
class ClaimResult:
    holds: bool
    observed: str


@dataclass(frozen=True)
class Claim:
    id: str
    lesson: str            # "03": the lesson whose prose states it
    text: str              # the claim, one line
    run: Callable[[], ClaimResult]
    source: str = ""       # NCCL claims: where it is stated (they are not run here)

    @property
    def sourced(self) -> bool:
        return bool(self.source)


CLAIMS: dict[str, Claim] = {}


def claim(lesson: str, text: str):
    """Register the decorated function as a claim of `lesson`, under its own name."""
    def register(fn):
        if fn.__name__ in CLAIMS and CLAIMS[fn.__name__].run is not fn:
            raise ValueError(f"two claims are called {fn.__name__!r}")
        CLAIMS[fn.__name__] = Claim(fn.__name__, lesson, text, fn)
        return fn
    return register


def nccl_claim(claim_id: str, lesson: str, text: str, source: str) -> Claim:
    """Register an NCCL claim: not run here (no GPUs), stated with its public `source`."""
    if claim_id in CLAIMS and CLAIMS[claim_id].text != text:
        raise ValueError(f"two claims are called {claim_id!r}")

    def run():
        return ClaimResult(True, f"NCCL, not run here; source: {source}")
    CLAIMS[claim_id] = Claim(claim_id, lesson, text, run, source)
    return CLAIMS[claim_id]


def get(claim_id: str) -> Claim:
    """The claim registered as `claim_id`; a KeyError that suggests close ids otherwise."""
    if claim_id not in CLAIMS:
        close = difflib.get_close_matches(claim_id, CLAIMS, n=3)
        hint = (f" Did you mean {', '.join(close)}?" if close else
                " See python -m labs.claims --list.")
        raise KeyError(f"no claim {claim_id!r} in the ledger.{hint}")
    return CLAIMS[claim_id]


def evaluate(entry: Claim) -> ClaimResult:
    """Run one claim (once per test session: labs/harness/once.py). A claim whose check
    itself fails counts as broken, with the reason."""
    if not entry.run.__module__.startswith("labs.claims."):     # a test's own claim
        return _run(entry)
    # The stubs' state is part of the key: a claim never runs an exercise, and if one ever
    # did, a run with the solutions on would not stand for one without.
    return once("claim", (entry.id, os.environ.get(SOLUTIONS_ENV, "")), lambda: _run(entry))


def _run(entry: Claim) -> ClaimResult:
    try:
        result = entry.run()
    except Exception as exc:  # noqa: BLE001 - a table row, not a traceback
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return ClaimResult(False, f"the check raised {type(exc).__name__}: {first}")
    if not isinstance(result, ClaimResult):
        return ClaimResult(False, f"the check returned {result!r}, not a ClaimResult")
    return result


def check(claim_id: str) -> None:
    """For notebooks: run one claim and print one stable line; AssertionError if broken.

    A cell that states a claim calls this, so the notebook run fails the day a torch
    release changes the behaviour. Returns None, so the cell shows that one line only.
    """
    entry = get(claim_id)
    if entry.sourced:
        print(f"NCCL, not run here: {entry.text} (source: {entry.source})")
        return
    result = evaluate(entry)
    if not result.holds:
        raise AssertionError(f"claim BROKEN: {entry.text} (observed: {result.observed}). "
                             f"Run `python -m labs.claims --lesson {entry.lesson}`.")
    print(f"claim holds: {entry.text} (observed: {result.observed})")
