"""What NCCL would do with the same calls: modelled from its documented rules and source,
never run here. Each rule names its source.

    any_source            NCCL has no receive from any source
    tags_ignored_on_nccl  NCCL ignores tags: its FIFO pairing per (sender, receiver) differs
    nccl_first_batch      a batch as the group's first call needs every rank in it
    ungrouped_exchange    two ranks each send to the other before receiving, ungrouped
    large_batch           hundreds of ops in one batch have hung NCCL
    one_work_per_batch    NCCL returns one Work per batch: works[i] for i >= 1 does not exist
"""
from __future__ import annotations

from labs.doctor.findings import Finding
from labs.doctor.matching import match

LARGE_BATCH = 256        # torch's proposed chunk size (pytorch/pytorch PR #174942)
FINE_ON_GLOO = "fine on gloo (observed in this run)"


def any_source_findings(runs) -> list:
    return [Finding("any_source", f"{c.describe()}", (c.rank,), [(c.rank, c.where)],
                    FINE_ON_GLOO, "NCCL has no any-source receive: src=None raises there",
                    "torch.distributed docs (recv: src None is not supported by NCCL)", True)
            for run in runs.values() for c in run.calls if c.kind == "recv" and c.peer is None
            and not c.raised]


def tag_findings(runs, gloo_pairs) -> list:
    nccl_pairs, out, seen = match(runs, tags=False), [], set()
    for run in runs.values():
        for s in run.calls:
            if s.kind != "send" or id(s) not in gloo_pairs or id(s) not in nccl_pairs:
                continue
            q_gloo, q_nccl = gloo_pairs[id(s)], nccl_pairs[id(s)]
            if q_gloo is q_nccl or (s.rank, s.peer) in seen:
                continue
            seen.add((s.rank, s.peer))
            out.append(Finding(
                "tags_ignored_on_nccl", f"tags decide which receive gets rank {s.rank}'s "
                f"message", (s.rank, q_gloo.rank), [(s.rank, s.where), (q_gloo.rank, q_gloo.where),
                                                    (q_nccl.rank, q_nccl.where)],
                f"{FINE_ON_GLOO}: gloo matched {s.describe()} with {q_gloo.describe()} by tag",
                f"NCCL ignores tags and pairs in order: {s.describe()} would land in "
                f"{q_nccl.describe()} instead", "torch.distributed docs (tag: ignored by "
                "NCCL)", True))
    return out


def first_batch_findings(runs) -> list:
    firsts = {r: next(iter(run.calls), None) for r, run in runs.items()}
    batched = [r for r, c in firsts.items() if c is not None and c.batch is not None]
    if not batched or len(batched) == len(runs):
        return []
    others = [r for r in runs if r not in batched]
    return [Finding(
        "nccl_first_batch", "the group's first call is a batch that not every rank joins",
        tuple(batched), [(r, firsts[r].where) for r in batched],
        f"{FINE_ON_GLOO} (rank{'s' if len(others) > 1 else ''} {', '.join(map(str, others))} "
        f"started with another call)",
        "undefined on NCCL: a batch_isend_irecv that is the group's first collective call "
        "must include every rank of the group (it creates the communicator)",
        "torch 2.13 batch_isend_irecv docstring; pytorch/pytorch#74701", True)]


def large_batch_findings(runs) -> list:
    return [Finding("large_batch", f"a batch of {len(b.seqs)} ops", (run.rank,),
                    [(run.rank, b.where)], FINE_ON_GLOO,
                    f"NCCL has hung on batches of hundreds of ops (more than {LARGE_BATCH}): "
                    "split it into smaller batches that match across ranks",
                    "pytorch/pytorch#174288, PR #174942", True)
            for run in runs.values() for b in run.batches.values() if len(b.seqs) > LARGE_BATCH]


def work_findings(runs) -> list:
    out = []
    for run in runs.values():
        for b in run.batches.values():
            n = len(b.seqs)
            if n > 1 and b.waited_index and any(i >= 1 for i in b.waited_index) \
                    and len(b.waited_index) < n:
                i = min(i for i in b.waited_index if i >= 1)
                out.append(Finding(
                    "one_work_per_batch", f"the script waits on request [{i}] of a batch",
                    (run.rank,), [(run.rank, b.where)], f"{FINE_ON_GLOO}: gloo returned "
                    f"{b.nworks} Works, one per op", f"NCCL returns a single Work for the "
                    f"whole batch: works[{i}] raises IndexError there; wait every Work the "
                    f"list holds (a loop works on both)", "FACTS of lesson 02: "
                    "ProcessGroupNCCL coalesces a batch into one group call", True))
    return out
