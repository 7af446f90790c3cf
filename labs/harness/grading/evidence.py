"""Failing cases that share a cause are one problem: the cause read from the evidence.

A grader that runs many cases keeps one `CaseOutcome` per case and rank (what the case was,
whether it failed, which elements were wrong). `one_cause()` then compares the failing cases
with the passing ones, on what a learner can change (the size against the world size, the
dtype) and on which elements were wrong, and says only what the evidence shows: a feature
every failing case has and no passing case has, or the same wrong elements in every failing
case. No list of known bugs: a cause the evidence does not single out is not said.
"""
from __future__ import annotations

import inspect
import os
from dataclasses import dataclass

import torch


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))


@dataclass(frozen=True)
class CaseOutcome:
    """One case on one rank. `message`: its failure ("" : it passed). `wrong`: the flat
    indices whose values were wrong, as (start, stop) ranges; `kept`: every wrong element
    still held this rank's own input (nothing was added there); `line`: the body's line
    that posted its last receive of the case (file:line, "" if none)."""

    case: str
    dtype: str
    numel: int
    world_size: int
    message: str = ""
    wrong: tuple = ()
    kept: bool = False
    line: str = ""


def outcome(case, *, dtype, world_size, data, got, expected, message, ops=(), body=None,
            allowed=None, line="", bits=False):
    """The CaseOutcome of one case: `data` this rank's input, `got` what the body left,
    `expected` the right values (same shape), `allowed` the error each element may have
    (default: float32's 1e-5, relative; none for integers; `bits`: none, bit for bit, for
    moved data), `ops` the record of the call (or `line`, the body's line found where the
    record was)."""
    wrong, kept = (), False
    comparable = got.shape == expected.shape and (not bits or got.dtype == expected.dtype)
    if message and comparable and got.numel():
        differ = _other_bits if bits else _wrong
        bad = differ(got.flatten(), expected.flatten(), allowed).nonzero().flatten().tolist()
        wrong = _ranges(bad)
        kept = bool(bad) and bool((got.flatten()[bad] == data.flatten()[bad]).all())
    return CaseOutcome(case, dtype, int(data.numel()), world_size, message, wrong, kept,
                       line or body_line(ops, body))


def _wrong(got, expected, allowed):
    """Which elements are wrong: integers exactly (beyond 2**53 a double rounds), floats
    beyond `allowed` (default: float32's 1e-5, relative)."""
    if allowed is None and not expected.is_floating_point():
        return got != expected
    g, e = got.double(), expected.double()
    limit = 1e-5 * (e.abs() + 1) if allowed is None else allowed.double().flatten()
    return (g - e).abs() > limit


def _other_bits(got, expected, _allowed):
    """Which elements differ in their bytes (NaN's payload and -0.0 included)."""
    size = got.element_size()
    return (got.contiguous().view(torch.uint8).view(-1, size) !=
            expected.contiguous().view(torch.uint8).view(-1, size)).any(dim=1)


def _ranges(indices) -> tuple:
    out: list = []
    for i in indices:
        if out and out[-1][1] == i:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1])
    return tuple(tuple(r) for r in out)


def body_line(ops, body) -> str:
    """The body's line (path from the course's folder) that posted its last receive in
    `ops`, else its last op: where the data the result holds came in."""
    try:
        path = inspect.getsourcefile(inspect.unwrap(body)) if body is not None else None
    except TypeError:
        path = None
    mine = [op for op in ops if path and op.where.rpartition(":")[0] == path]
    chosen = [op for op in mine if op.kind == "recv"] or mine
    if not chosen:
        return ""
    file, _, line = chosen[-1].where.rpartition(":")
    return f"{os.path.relpath(file, _ROOT)}:{line}"


def _tail(o: CaseOutcome) -> bool:
    """Every wrong element lies past world_size * (numel // world_size) (one there may be
    right by chance: a rank's own input near the sum, within the dtype's rounding)."""
    k = o.world_size * (o.numel // o.world_size)
    return bool(o.wrong) and all(k <= start and stop <= o.numel for start, stop in o.wrong)


_NOTHING_CAME = ", never received: each still holds what the rank had there before"


def _causes(failing, passing, moved=False) -> list[str]:
    """What every failing case shares and no passing case has, said in the lesson's words
    (`moved`: the exercise moves data, it adds nothing up)."""
    said = []
    p = failing[0].world_size
    passing = [o for o in passing if o.numel]     # an empty tensor passes anything
    if all(o.numel % o.world_size for o in failing) and passing and \
            not any(o.numel % o.world_size for o in passing):
        said.append(f"only sizes not divisible by the world size fail (numel % {p} != 0 in "
                    f"every failing case; every case whose numel divides by {p} passes)")
    elif all(o.numel < o.world_size for o in failing) and passing and \
            not any(o.numel < o.world_size for o in passing):
        said.append(f"only tensors with fewer elements than ranks ({p}) fail")
    bad, good = {o.dtype for o in failing}, {o.dtype for o in passing}
    if good and not bad & good:
        same = " on the same shapes" if {o.numel for o in failing} <= \
            {o.numel for o in passing} else ""
        said.append(f"only {', '.join(sorted(bad))} fail{'s' if len(bad) == 1 else ''} "
                    f"({', '.join(sorted(good))} pass{'es' if len(good) == 1 else ''}{same}): "
                    f"look at what the body does with that dtype")
    if all(_tail(o) for o in failing):
        kept = "" if not all(o.kept for o in failing) else _NOTHING_CAME if moved else \
            ", never reduced: each rank ends with its own input there"
        so = "" if said and "divisible" in said[0] else \
            ", so only sizes not divisible by the world size fail"
        said.append(f"in each, only elements k..numel-1, k = {p} * (numel // {p}) (the last "
                    f"numel % {p}), are wrong{kept}; the chunks leave the remainder out{so}")
    elif all(o.kept for o in failing):
        said.append("every wrong element still holds what the rank had there before: "
                    "nothing arrived there" if moved else "every wrong element still holds "
                    "the rank's own input: nothing was added there")
    return said


def one_cause(outcomes, what: str, moved=False) -> tuple[str, list[str]]:
    """(one problem naming the cause the failing cases share, the messages it stands for);
    ("", []) when fewer than two cases fail or the evidence singles out no cause.
    `outcomes`: every case on every rank (a case fails if it fails on any rank); `moved`:
    the exercise moves data (nothing is reduced)."""
    cases: dict = {}
    for o in outcomes:
        cases.setdefault(o.case, []).append(o)
    failing = [next(o for o in per if o.message) for per in cases.values()
               if any(o.message for o in per)]
    passing = [per[0] for per in cases.values() if not any(o.message for o in per)]
    said = _causes(failing, passing, moved) if len(failing) > 1 else []
    if not said:
        return "", []
    first = failing[0]
    line = next((o.line for o in failing if o.line), "")
    where = f"{line}: " if line else ""
    posted = f" (its receives are posted at {line})" if line else ""
    text = (f"{where}{what}: {len(failing)} of {len(cases)} cases fail at world size "
            f"{first.world_size}, with one cause{posted}: {'; '.join(said)}. "
            f"The first: {first.message.removeprefix(what + ': ')}")
    covered = [o.message for o in outcomes if o.message]
    return text, covered


def grouped(failures, outcomes, what: str, moved=False) -> list[str]:
    """`failures` with the ones a shared cause covers told once, as that cause, first."""
    cause, covered = one_cause(outcomes, what, moved)
    return [cause] * bool(cause) + [f for f in failures if f not in covered]
