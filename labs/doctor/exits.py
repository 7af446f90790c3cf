"""How a run ended, in words that say what happened: a job the doctor stopped at its
deadline (after how many calls, or while it was still starting), the script's own errors
(an argparse refusal said as such), and the verdict of exit status 2, which never names a
cause that did not occur.

Exit status 0 needs something checked: a process group made AND used (a communication call
recorded). A script that only joins and leaves made a group, but nothing was checked.
"""
from __future__ import annotations

NOTHING = "no process group was created: nothing to check"
UNUSED = "the script made a process group but never communicated through it: nothing to check"
ARGPARSE = "its command line was refused by argparse"


def calls(runs) -> int:
    """Communication calls recorded, every rank together."""
    return sum(len(run.calls) for run in runs.values())


def _count(n: int) -> str:
    return f"{n} communication call{'s' if n != 1 else ''}"


def _joined(runs) -> int:
    return sum(bool(run.inits) for run in runs.values())


def how_it_ended(text: str) -> str:
    """'raised KeyError', or 'exited with status 2' for sys.exit (argparse's included), from
    a rank's exit text ('KeyError: ...', 'SystemExit: 2...')."""
    kind, _, rest = text.partition(": ")
    if kind == "SystemExit":
        code = rest.split(": ")[0]
        return f"exited with status {code}" if code.lstrip("-").isdigit() else \
            f"exited: sys.exit({code!r})"
    return f"raised {kind}"


def deadline_line(runs, outcome, world: int) -> str:
    """The ending of a job the doctor stopped at its deadline: what it had done by then."""
    head = f"the doctor stopped the job at its deadline ({outcome.job.deadline_s:g} s)"
    n = calls(runs)
    if n:
        return f"{head} after {_count(n)}"
    joined, world = _joined(runs), max(world, outcome.job.nproc())
    if joined == world:
        return f"{head}: every rank had made its process group, none had communicated"
    return (f"{head} while the job was starting: {joined} of {world} rank"
            f"{'s' if world > 1 else ''} had made the process group (start-up took longer "
            f"than the deadline left it; give a longer --deadline)")


def script_errors(errors: list[str]) -> list[str]:
    """The script's own errors (failures.script_errors: 'rank 0: x.py:12: AssertionError'),
    one line per distinct error naming its ranks; argparse's refusal said as such, in
    argparse's words (the agent's exit text: 'SystemExit: 2: <ARGPARSE>: x.py: error: ...')."""
    places: dict[str, list[str]] = {}
    for line in errors:
        rank, _, text = line.partition(": ")
        places.setdefault(text, []).append(rank.removeprefix("rank "))
    out = []
    for text, ranks in places.items():
        who = f"rank{'s' if len(ranks) > 1 else ''} {', '.join(ranks)}"
        where, _, said = text.partition(f": {ARGPARSE}: ")
        if said:
            out.append(f"argparse refused the script's command line: {who}: "
                       f"{where.rsplit(': SystemExit', 1)[0]}: {said}")
        else:
            out.append(f"the script raised: {who}: {text}")
    return out


def verdict(report) -> str:
    """Exit status 2 without a problem: what happened, in one line."""
    runs, outcome = report.runs, report.outcome
    n, texts = calls(runs), [run.exit.text for run in runs.values() if run.exit is not None]
    stopped = outcome is not None and outcome.stopped == "deadline"
    unmapped = any(t.startswith("NotMapped") for t in texts)
    if n:
        clean = "in what ran, no problems found on gloo; none predicted on NCCL"
        if stopped:
            return f"stopped at the deadline after {_count(n)}: {clean}; the rest was not checked"
        if unmapped:
            return (f"the script stopped after {_count(n)} at a call the doctor cannot run on "
                    f"the CPU (see above): {clean}; the rest was not checked")
        if any(texts):
            return f"the script raised its own error after {_count(n)} (see above): {clean}"
        return f"the job failed after {_count(n)} (see above): {clean}"
    if stopped:
        return ("stopped at the deadline before any communication call: nothing checked"
                + ("" if _joined(runs) else " (give a longer --deadline)"))
    if any(ARGPARSE in t for t in texts):
        return "argparse refused the script's command line (see above): nothing checked"
    if unmapped:
        return "the script could not run under the doctor (see above): nothing checked"
    if any(texts):
        return "the script raised before it communicated (see above): nothing checked"
    return UNUSED if _joined(runs) else NOTHING
