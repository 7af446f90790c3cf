"""What a schedule does, predicted by `check` or observed by `execute`: one word each, with
the words a prediction and a real run print for it."""
from __future__ import annotations

from labs.harness.ranks.words import Words


class Outcome(Words):
    """`.shown`: the prediction's words (Report); `.observed`: a real run's (RunOutcome)."""

    OK = "ok", "OK: every call completes and every receive gets its message"
    SILENT = "silent", "COMPLETES, but with silently wrong data"
    HANG = "hang", "HANG"
    ERROR = "error", "ERROR: a call raises"
    ABORT = "abort", "ABORT: a process is killed"
    UNDEFINED = "undefined", "UNDEFINED on NCCL (see the verdicts)"
    WARNING = "warning"         # a verdict only: fine here, but fragile

    @property
    def observed(self) -> str:
        return OBSERVED[self]


# A real run reports what happened, in the past tense, without the prediction's gloss.
OBSERVED = {Outcome.OK: "OK", Outcome.SILENT: "COMPLETED, with silently wrong data",
            Outcome.HANG: "HANG", Outcome.ERROR: "ERROR", Outcome.ABORT: "ABORT"}
