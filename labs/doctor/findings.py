"""A finding: one problem, said the way a compiler says an error, with the lesson that
teaches it."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

LESSON = {
    "deadlock": "04_deadlock_hazards", "unmatched_send": "04_deadlock_hazards",
    "unmatched_recv": "04_deadlock_hazards", "tag_mismatch": "04_deadlock_hazards",
    "size_mismatch": "04_deadlock_hazards", "dtype_mismatch": "04_deadlock_hazards",
    "group_mismatch": "04_deadlock_hazards", "communicator_order": "04_deadlock_hazards",
    "self": "04_deadlock_hazards", "call_failed": "11_your_own_job",
    "group_outlives_destroy": "11_your_own_job",
    "unwaited": "03_waiting_and_overlap", "partly_waited": "03_waiting_and_overlap",
    "polled_not_waited": "03_waiting_and_overlap",
    "barrier_instead_of_wait": "03_waiting_and_overlap",
    "buffer_in_flight": "03_waiting_and_overlap",
    "buffer_freed": "03_waiting_and_overlap", "stream_race": "03_waiting_and_overlap",
    "not_contiguous": "04_deadlock_hazards",
    "any_source": "02_p2pop_and_batching", "tags_ignored_on_nccl": "02_p2pop_and_batching",
    "nccl_first_batch": "02_p2pop_and_batching", "ungrouped_exchange": "02_p2pop_and_batching",
    "one_work_per_batch": "02_p2pop_and_batching", "same_gpu": "02_p2pop_and_batching",
    "lazy_communicators": "09_production_patterns",
}
NCCL_LABEL = "NCCL, modelled, not run here"


@dataclass
class Finding:
    """One problem. `where`: (rank, file:line) of each call involved, in order.
    `gloo`: what happened in this run (observed); `nccl`: what NCCL would do (modelled,
    with its `source`). `nccl_only`: fine on gloo, a problem only on NCCL."""

    kind: str
    title: str
    ranks: tuple
    where: list
    gloo: str
    nccl: str
    source: str = ""
    nccl_only: bool = False
    warning: bool = False          # a hazard seen on gloo, not a failure: "warning", not "error"
    note: bool = False             # a risk this run did not show: said, not counted (exit 0)
    extra: list = field(default_factory=list)      # further lines (py-spy stacks, ...)

    @property
    def lesson(self) -> str:
        return f"notebooks/{LESSON[self.kind]}.ipynb"

    @property
    def first_where(self) -> str:
        return self.where[0][1] if self.where else "?"


def short_error(text: str, limit: int = 200) -> str:
    """An error's stable part: no build path, no addresses, at most `limit` characters."""
    text = re.sub(r"\[enforce fail at \S+\] ", "", text)
    text = re.sub(r"\s*\(\[?[\d.:]+\]?:\d+ <-> .*$|\s*\(\[[\d.]+.*$", "", text)
    return text[:limit]
