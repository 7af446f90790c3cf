"""What NCCL would do with the same calls: modelled from its documented rules and source,
never run here. Each rule names its source.

    any_source            NCCL has no receive from any source
    tags_ignored_on_nccl  NCCL ignores tags: its FIFO pairing per (sender, receiver) differs
    nccl_first_batch      a batch as the group's first call needs every rank in it
    same_gpu              NCCL ranks of one node on one GPU (no torch.cuda.set_device, no
                          device_id, no device named per rank): NCCL refuses the communicator
    one_work_per_batch    NCCL returns one Work per batch: what breaks on a one-element
                          list (unpacked into several names, works[i] for i not 0 or -1
                          and not relative to len(works), zip() against the ops, len()
                          compared with the op count) works on gloo only
(communicators.py: per-pair communicators; streams.py: ungrouped exchanges.)

Large batches: not a rule, a stated limit. pytorch/pytorch#174288 reports hangs of large
batch_isend_irecv groups on NCCL that come from how NCCL splits a group into kernel plans
(each rank cuts its own queue at a per-plan budget, so a send and its receive can land in
different plans), not from an op count; the PR that chunked batches at 256 ops
(pytorch/pytorch#174942) was closed unmerged, and a maintainer reported in #174288 that with
NCCL 2.30 the repro no longer hangs. torch 2.13.0's Linux wheel on PyPI pins
nvidia-nccl-cu13==2.29.7 (its Requires-Dist), older than 2.30: such a hang is possible
with it, but where NCCL splits a group is not modelled, so the doctor says nothing per batch.
"""
from __future__ import annotations

from labs.doctor.communicators import cpu_groups, eager
from labs.doctor.findings import Finding
from labs.doctor.matching import match

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


ONE_WORK_SOURCE = ("torch 2.13 distributed_c10d.py batch_isend_irecv: with a backend that "
                   "supports coalescing (NCCL) it returns cm.works, where _coalescing_manager "
                   "appends the one Work of _end_coalescing")
_READ = {"unpack": ("the list of a batch's {n} Works unpacked into {i} names",
                    "unpacking it into {i} names raises ValueError there"),
         "index": ("the script reads works[{i}] of a batch of {n} ops",
                   "works[{i}] raises IndexError there"),
         "zip": ("the script zips the list of a batch's {n} Works with another list",
                 "zip() stops after its one Work: the loop runs once there, not {n} times"),
         "len": ("the script compares len() of a batch's {n} Works",
                 "len() of the list is 1 there, not {n}, and the comparison answers the "
                 "other way")}


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


SAME_GPU_NCCL = ("ranks {ranks} would all be on cuda:{d} at their first NCCL call (the current "
                 "device, or the one device their tensors name: no "
                 "torch.cuda.set_device(local_rank), no device_id). NCCL refuses two ranks of "
                 "one communicator on one GPU: creating it fails with ncclInvalidUsage "
                 "('Duplicate GPU detected') at this first call, and torch's docs warn of "
                 "hangs. Call torch.cuda.set_device(local_rank) first, or pass "
                 "device_id=torch.device('cuda', local_rank) to init_process_group")
SAME_GPU_SOURCE = ("torch 2.13 distributed_c10d.py batch_isend_irecv docstring (NCCL users "
                   "must call torch.cuda.set_device, 'otherwise it will lead to unexpected hang "
                   "issues') and send_object_list's (the device is torch.cuda.current_device()); "
                   "NVIDIA/nccl src/init.cc, initTransportsRank: 'Duplicate GPU detected : rank "
                   "%d and rank %d both on CUDA device %lx', ncclInvalidUsage")


def _gpu(events: list):
    """(device, where of the first call) of a rank on NCCL: the device it named if it named
    one, else its current device; None when it named several (not modelled)."""
    told = next((e for e in events if e.event == "device"), None)
    first = next((e for e in events if e.event == "call"), None)
    if told is None or first is None:
        return None
    named = [int(i) for i in told.text.split(",") if i]
    if len(named) > 1:
        return None
    return (named[0] if named else told.index), first.where


def same_gpu_findings(runs, events: dict) -> list:
    """Ranks that asked for NCCL and would share a GPU at their first NCCL call."""
    if eager(runs):
        return []               # device_id: each rank's communicator is on that device
    on = {}
    for r, run in runs.items():
        gpu = _gpu(events.get(r, [])) if any("nccl" in i.text for i in run.inits) else None
        if gpu is not None:
            on.setdefault(gpu[0], []).append((r, gpu[1]))
    out = []
    for d, ranks in sorted(on.items()):
        if len(ranks) > 1:
            names = ", ".join(str(r) for r, _ in ranks)
            out.append(Finding("same_gpu", f"ranks {names} on one GPU (cuda:{d})",
                               tuple(r for r, _ in ranks), list(ranks),
                               f"{FINE_ON_GLOO}: gloo does not use GPUs",
                               SAME_GPU_NCCL.format(ranks=names, d=d), SAME_GPU_SOURCE, True))
    return out
