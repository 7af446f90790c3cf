"""What NCCL would do with the same calls: modelled from its documented rules and source,
never run here. Each rule names its source.

    any_source            NCCL has no receive from any source
    tags_ignored_on_nccl  NCCL ignores tags: its FIFO pairing per (sender, receiver) differs
    nccl_first_batch      a batch as the group's first call needs every rank in it
    large_batch           hundreds of ops in one batch have hung NCCL
    one_work_per_batch    NCCL returns one Work per batch: the list unpacked, works[i] for
                          i >= 1, or len() relied on work on gloo only
(communicators.py: per-pair communicators; streams.py: ungrouped exchanges.)
"""
from __future__ import annotations

from labs.doctor.communicators import cpu_groups, eager
from labs.doctor.findings import Finding
from labs.doctor.matching import match

LARGE_BATCH = 256        # torch's proposed chunk size (pytorch/pytorch PR #174942)
FINE_ON_GLOO = "fine on gloo (observed in this run)"


def any_source_findings(runs) -> list:
    return [Finding("any_source", f"{c.describe()}", (c.rank,), [(c.rank, c.where)],
                    FINE_ON_GLOO, "NCCL has no any-source receive: src=None raises there",
                    "torch 2.13 distributed_c10d.py recv/irecv (src=None calls "
                    "ProcessGroup.recv_anysource); ProcessGroupNCCL's recvAnysource, listed "
                    "under 'Unsupported Ops' in torch 2.13's ProcessGroupNCCL.hpp, raises",
                    True)
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


def _first_on_group_comm(run, group):
    """The rank's first call on `group`'s own communicator, as attempted (a batch that raised
    at its first op was still this rank's batch): a batch or a collective (ungrouped sends
    and receives use per-pair communicators when device_id is not given)."""
    return next((c for c in run.calls if c.group == group and (
        c.batch is not None or c.kind in ("sync", "collective"))), None)


def first_batch_findings(runs) -> list:
    """Per NCCL process group: its members whose first call on the group's communicator is
    a batch, when another member starts that communicator with something else."""
    if eager(runs):
        return []           # device_id: the communicator was made at init, by every rank
    cpu, out = cpu_groups(runs), []
    for group in sorted({c.group for run in runs.values() for c in run.calls} - cpu):
        members = _members(runs, group)
        firsts = {r: _first_on_group_comm(runs[r], group) for r in members}
        batched = [r for r, c in firsts.items() if c is not None and c.batch is not None]
        if batched and len(batched) < len(members):
            out.append(_first_batch(firsts, batched, [r for r in members if r not in batched]))
    return out


def _members(runs, group) -> list:
    ranks = next((c.group_ranks for run in runs.values() for c in run.calls
                  if c.group == group and c.group_ranks), ())
    return sorted(set(ranks or runs) & set(runs))


def _first_batch(firsts, batched, others) -> Finding:
    on = firsts[batched[0]].on_group()
    return Finding(
        "nccl_first_batch", f"the group's first call is a batch that not every rank "
        f"joins{on}", tuple(batched), [(r, firsts[r].where) for r in batched],
        f"{FINE_ON_GLOO} (rank{'s' if len(others) > 1 else ''} {', '.join(map(str, others))} "
        f"started with another call)",
        "undefined on NCCL: a batch_isend_irecv that is the group's first collective call "
        "must include every rank of the group (it creates the communicator); pass "
        "device_id to init_process_group to create it at init",
        "torch 2.13 distributed_c10d.py batch_isend_irecv docstring; pytorch/pytorch#74701",
        True)


def large_batch_findings(runs) -> list:
    return [Finding("large_batch", f"a batch of {len(b.seqs)} ops", (run.rank,),
                    [(run.rank, b.where)], FINE_ON_GLOO,
                    f"NCCL has hung on batches of hundreds of ops (more than {LARGE_BATCH}): "
                    "split it into smaller batches that match across ranks",
                    "pytorch/pytorch#174288, PR #174942", True)
            for run in runs.values() for b in run.batches.values() if len(b.seqs) > LARGE_BATCH]


ONE_WORK_SOURCE = ("torch 2.13 distributed_c10d.py batch_isend_irecv: with a backend that "
                   "supports coalescing (NCCL) it returns cm.works, where _coalescing_manager "
                   "appends the one Work of _end_coalescing")
_READ = {"unpack": ("the list of a batch's {n} Works unpacked into names",
                    "unpacking it into {n} names raises ValueError there"),
         "index": ("the script reads works[{i}] of a batch of {n} ops",
                   "works[{i}] raises IndexError there"),
         "slice": ("the script slices the list of a batch's {n} Works",
                   "a slice from {i} holds at most that one Work there"),
         "len": ("the script relies on len() of a batch's {n} Works",
                 "len() of the list is 1 there, not {n}")}


def work_findings(runs, events: dict) -> list:
    """How the script read a batch's list of Works (the agent's "works" events)."""
    out, seen = [], set()
    for r, run in runs.items():
        for e in events.get(r, []):
            b = run.batches.get(e.batch)
            if e.event != "works" or b is None or e.numel < 2 or (r, e.where, e.text) in seen:
                continue
            seen.add((r, e.where, e.text))
            title, nccl = (t.format(n=e.numel, i=e.index) for t in _READ[e.text])
            out.append(Finding(
                "one_work_per_batch", title, (r,), [(r, e.where), (r, b.where)],
                f"{FINE_ON_GLOO}: gloo returned {e.numel} Works, one per op",
                f"NCCL returns a single Work for the whole batch: {nccl}. Wait every Work "
                f"the list holds in a loop (for w in works: w.wait()), right on both",
                ONE_WORK_SOURCE, True))
    return out
