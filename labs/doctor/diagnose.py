"""What went wrong on gloo, from every rank's record: the observed half of the diagnosis.

    hangs        the call each stuck rank sat in; the cycle of ranks waiting for each other
    lone ops     sends and receives nothing matched (a tag mismatch when only the tag differs)
    waits        requests never waited, a batch waited in part, a barrier instead of a wait
    buffers      a buffer used between post and wait; matched pairs of other size or dtype
    failures     calls that raised (send/recv to self included) and ranks that died
"""
from __future__ import annotations

from labs.doctor.findings import Finding, short_error
from labs.harness.schedule.deadlock import cycle_through, tarjan

SAME_ON_NCCL = "the same on NCCL"
NCCL_SIZES = "NCCL does not compare sizes or dtypes: undefined (corrupt data or a hang)"
NCCL_DEADLOCK = ("the same cycle on NCCL; NCCL may buffer a small send, so there it can pass "
                 "for small messages and hang for large ones")
# A receive completes only when its send is posted: no buffer breaks a cycle of receives.
NCCL_DEADLOCK_RECVS = "the same cycle on NCCL, at every size: a receive waits for its send"
NCCL_DEADLOCK_NO_SEND = ("the same cycle on NCCL, at every size: no send in it that NCCL "
                         "could buffer (a receive waits for its send, a collective for every "
                         "member of its group)")
NCCL_SOURCE = "NVIDIA/nccl#479, #783 (an NCCL send may wait for its receive)"


def _w(c) -> tuple:
    return (c.rank, c.where)


def stuck_calls(runs: dict, outcome) -> dict:
    """rank -> the call it sat in when the run ended (hangs and timeouts only)."""
    out = {}
    for r, run in runs.items():
        c = run.blocked()
        if c is not None and not c.raised and (outcome.stopped or c.wait_failed):
            out[r] = c
    return out


def _counterpart(runs, c, pairs) -> bool:
    """The peer did post an op the other way that matched nothing (another tag, or another
    process group): the two met, they just do not match. Not a wait for a call the peer has
    not reached."""
    other = "recv" if c.kind == "send" else "send"
    return c.peer in runs and any(
        x.kind == other and x.peer == c.rank and not x.raised and id(x) not in pairs
        for x in runs[c.peer].calls)


def _collectives(run, group, before=None) -> int:
    """How many collectives and barriers the rank posted on `group` (before seq `before`)."""
    return sum(1 for x in run.calls if x.kind in ("sync", "collective") and x.group == group
               and (before is None or x.seq < before))


def _edges(runs, stuck, pairs) -> dict:
    """rank -> the stuck ranks it waits for. A collective waits for the members of its own
    group that have not reached it: each group counts its collectives apart."""
    edges = {}
    for r, c in stuck.items():
        if c.p2p:
            partner = pairs.get(id(c))
            peers = {c.peer} if partner is None and c.peer is not None \
                and not _counterpart(runs, c, pairs) else set()
        else:
            k = _collectives(runs[r], c.group, c.seq)
            members = set(c.group_ranks) or set(runs)
            peers = {o for o in members & set(runs) if _collectives(runs[o], c.group) <= k}
        edges[r] = {p for p in peers if p in stuck and p != r}
    return edges


def hang_findings(runs, outcome, pairs) -> tuple[list, set]:
    """Deadlock cycles and the stuck calls outside them; the ids of the calls explained."""
    stuck = stuck_calls(runs, outcome)
    edges, found, explained = _edges(runs, stuck, pairs), [], set()
    for comp in tarjan(edges):
        if len(comp) < 2:
            continue
        cycle = cycle_through({v: edges[v] & set(comp) for v in comp}, comp[0])
        calls = [stuck[r] for r in cycle]
        explained |= {id(c) for c in calls}
        words = " while ".join(f"rank {c.rank} waits in {c.describe()}" for c in calls)
        found.append(Finding(
            "deadlock", f"ranks {', '.join(map(str, cycle))} wait for each other", tuple(cycle),
            [_w(c) for c in calls], f"{words}: no rank reaches the call the next one waits "
            f"for; {_how_stopped(outcome, calls)}",
            NCCL_DEADLOCK_RECVS if all(c.kind == "recv" for c in calls) else
            NCCL_DEADLOCK_NO_SEND if all(c.kind != "send" for c in calls) else NCCL_DEADLOCK,
            NCCL_SOURCE))
    return found, explained


def _how_stopped(outcome, calls) -> str:
    # The rank whose timeout fired first closes the pair: the others see "Connection
    # closed by peer" (or the like), so say the timeout, whichever rank had it.
    failed = sorted((c for c in calls if c.wait_failed),
                    key=lambda c: "Timed out" not in c.wait_failed)
    if failed:
        return f"gloo's timeout fired ({short_error(failed[0].wait_failed)})"
    return "the doctor stopped the job when every rank had waited with no progress"


def lone_findings(runs, outcome, pairs, explained) -> list:
    """Sends and receives that nothing matched; two that differ only in tag or in process
    group, as one."""
    stuck = stuck_calls(runs, outcome)
    lone = [c for run in runs.values() for c in run.calls
            if c.p2p and not c.raised and id(c) not in pairs and id(c) not in explained
            and c.peer != c.rank and _peer_done(runs, c, stuck)]
    out = []
    for q in [c for c in lone if c.kind == "recv" and c.peer is not None]:
        sends = [c for c in lone if c.kind == "send" and c.rank == q.peer and c.peer == q.rank]
        s = next((c for c in sends if c.group == q.group), sends[0] if sends else None)
        if s is not None:
            lone = [c for c in lone if c is not s and c is not q]
            out.append(_tag_mismatch(s, q, stuck) if s.group == q.group
                       else _group_mismatch(s, q, stuck))
            out[-1].extra = [id(s), id(q)]
    return out + [_lone(c, stuck, runs) for c in lone]


def _peer_done(runs, c, stuck) -> bool:
    """The other side can no longer post a match: it ended, or it is stuck itself."""
    if c.rank in stuck and stuck[c.rank] is c:
        return True
    peers = range(len(runs)) if c.peer is None else [c.peer]
    return all(p in stuck or (p in runs and runs[p].exit is not None) for p in peers)


def _tag_mismatch(s, q, stuck) -> Finding:
    hung = [c for c in (s, q) if stuck.get(c.rank) is c]
    what = (f"rank {hung[0].rank} waits for it until the job is stopped" if hung else
            "nothing waits for them: the message is silently lost")
    return Finding("tag_mismatch", f"tag {s.tag} sent, tag {q.tag} expected",
                   (s.rank, q.rank), [_w(s), _w(q)],
                   f"rank {s.rank}'s {s.describe()} and rank {q.rank}'s {q.describe()} never "
                   f"match (gloo honours tags); {what}",
                   "NCCL ignores tags: these two would match there", "torch.distributed docs "
                   "(tags are not supported by NCCL)")


def _on(c) -> str:
    return c.describe() + ("" if c.on_group() else " on the default group")


def _group_mismatch(s, q, stuck) -> Finding:
    hung = [c.rank for c in (s, q) if stuck.get(c.rank) is c]
    what = ("nothing waits for them: the message is silently lost" if not hung else
            f"rank {hung[0]} waits for it until the job is stopped" if len(hung) == 1 else
            f"ranks {hung[0]} and {hung[1]} wait for them until the job is stopped")
    return Finding("group_mismatch", "sent on one process group, expected on another",
                   (s.rank, q.rank), [_w(s), _w(q)],
                   f"rank {s.rank}'s {_on(s)} and rank {q.rank}'s {_on(q)} never match: each "
                   f"process group matches only its own messages; {what}",
                   "the same on NCCL: each group has its own communicator",
                   "torch 2.13 distributed_c10d.py _new_process_group_helper (a backend "
                   "object per group)")


def _lone(c, stuck, runs) -> Finding:
    other = "receive" if c.kind == "send" else "send"
    peer = "any rank" if c.peer is None else f"rank {c.peer}"
    if stuck.get(c.rank) is c and c.wait_failed:
        tail = f"its wait failed ({short_error(c.wait_failed, 120)})"
    elif stuck.get(c.rank) is c:
        tail = "its rank waits for it until the job is stopped"
    elif c.kind == "send":
        tail = "nothing waited for it to complete: the message is lost"
    else:
        tail = "its buffer was never written, and the program went on with it"
    return Finding(f"unmatched_{c.kind}", f"{c.describe()} matched nothing", (c.rank,), [_w(c)],
                   f"no {other} from {peer} ever matched it; {tail}", SAME_ON_NCCL,
                   extra=[id(c)])


def wait_findings(runs, lone: set) -> list:
    """Requests never waited (a barrier in their place), and batches waited in part.
    `lone`: ids of calls that matched nothing (said already)."""
    out = []
    for run in runs.values():
        if run.exit is None:
            continue                      # stopped mid-way: its waits may still have come
        out += _partly_waited(run)
        in_part = {s for f in out for s in f.extra}
        for c in run.calls:
            if c.p2p and not c.raised and not c.blocking and not c.waits and not c.waited \
                    and id(c) not in lone and (run.rank, c.seq) not in in_part:
                out.append(_unwaited(run, c))
    return out


def _partly_waited(run) -> list:
    out = []
    for b in run.batches.values():
        calls = [run.by_seq[s] for s in b.seqs if s in run.by_seq]
        waited = [c for c in calls if c.waits or c.waited]
        if waited and len(waited) < len(calls):
            missing = [c for c in calls if not (c.waits or c.waited)]
            out.append(Finding(
                "partly_waited", f"{len(waited)} of the {len(calls)} requests of a batch waited",
                (run.rank,), [(run.rank, b.where)],
                f"on gloo batch_isend_irecv returns one Work per op; waiting some does not "
                f"complete the others ({', '.join(c.describe() for c in missing)} never "
                f"waited)", "NCCL returns one Work for the whole batch: waiting it completes "
                "every op", "torch 2.13: ProcessGroupGloo supports_coalescing is False",
                extra=[(run.rank, c.seq) for c in missing]))
    return out


def _unwaited(run, c) -> Finding:
    barrier = next((x for x in run.calls if x.kind == "sync" and x.seq > c.seq), None)
    if barrier is not None:
        return Finding("barrier_instead_of_wait", "a request never waited: a barrier "
                       "stands in the place of its wait()", (c.rank,), [_w(c), _w(barrier)],
                       f"rank {c.rank}'s {c.describe()} was never waited; a barrier is a "
                       f"separate collective: it does not complete the request (its Work "
                       f"still reports is_completed() False after it)", SAME_ON_NCCL)
    return Finding("unwaited", "a request never waited", (c.rank,), [_w(c)],
                   f"rank {c.rank}'s {c.describe()} was never waited: the program may read "
                   f"or reuse its buffer before the transfer is done", "the same on NCCL, "
                   "where wait() only orders the CUDA stream")
