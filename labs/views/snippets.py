"""Notebook 08's notebook-side code: show a snippet's source, and turn what its workers
returned (or how they failed) into a few stable lines."""
import collections
import inspect

import torch.distributed.distributed_c10d as c10d

from labs.harness.ranks.gloo_text import abort_reason
from labs.harness.notebook.plots import match_pairs


def show(fn):
    """Print the code that the workers really run."""
    print(inspect.getsource(fn))


def print_failure(exc, name_ranks=True):
    """A WorkerError's stable part; for a process gloo killed, the reason it printed.
    name_ranks=False when which rank dies first is a race (the launcher then stops the
    others): only that one was killed is stable."""
    killed = [r for r, cause in exc.causes.items() if cause.startswith("was killed")]
    if killed and not name_ranks:
        print(f"a worker {exc.causes[killed[0]]}")
    else:
        print(exc.brief())
    if killed:
        print("gloo said before it aborted:", abort_reason(exc))


def _lines_with(fn, markers):
    """The lines of `fn`'s source that contain one of `markers`, with their indentation."""
    return [line for line in inspect.getsource(fn).splitlines()
            if any(marker in line for marker in markers)]


def show_nccl_branch():
    """The lines of this torch's batch_isend_irecv that give NCCL one Work per batch."""
    print(f"{c10d.__name__}.batch_isend_irecv:")
    for line in _lines_with(c10d.batch_isend_irecv,
                            ["supports_coalescing", "_coalescing_manager(", "return cm.works"]):
        print(line)
    print(f"{c10d.__name__}._coalescing_manager, at its end:")
    for line in _lines_with(c10d._coalescing_manager, ["if async_ops:", "cm.append(work)"]):
        print(line)


def snippet1_report(results):
    """What snippet 1 (peers and size fixed) did on each rank."""
    for rank, r in enumerate(results):
        peer_sent = results[1 - rank]["sent"]
        print(f"rank {rank}: tensor2, which the text then processes, is unchanged: "
              f"{r['tensor2_unchanged']}")
        print(f"        the receive buffer (only ops[1].tensor still refers to it) holds "
              f"rank {1 - rank}'s tensor1: {bool((r['received'] == peer_sent).all())}")
        print(f"        Works returned: {r['works']}; the snippet waited for: "
              f"{', '.join(r['waited_for'])}")


def made_of_table(results, names):
    """Per rank and parameter, what snippet 3's "average" is made of."""
    for rank, r in enumerate(results):
        parts = "; ".join(f"{n} = {m}" for n, m in zip(names, r["made_of"]))
        print(f"rank {rank}: {parts}")


def call_counts(calls):
    """'isend 1, irecv 1, barrier 1, wait 0': how often the snippet called each."""
    counts = collections.Counter(calls)
    return ", ".join(f"{op} {counts[op]}" for op in ("isend", "irecv", "barrier", "wait"))


def sends_by_parameter(trace, model):
    """Per traced rank, what it sent to whom, named by the parameter of that size."""
    by_size = {p.numel(): (k, name) for k, (name, p) in enumerate(model.named_parameters())}
    for rank in sorted({e.rank for e in trace}):
        sends = [e for e in trace if e.rank == rank and e.op == "isend"]
        parts = [f"to {e.peer}: {e.numel} x {e.dtype} (parameter {by_size[e.numel][0]}, "
                 f"'{by_size[e.numel][1]}')" for e in sends]
        print(f"rank {rank} sent " + "; ".join(parts))


def matching_summary(trace):
    """Per rank: sends and receives posted, and how many receives a send matched (FIFO
    per pair, as gloo matches them), by source."""
    matched = collections.Counter((r.rank, r.peer) for _, r in match_pairs(trace))
    for rank in sorted({e.rank for e in trace}):
        ops = collections.Counter(e.op for e in trace if e.rank == rank)
        sources = sorted(peer for (r, peer) in matched if r == rank)
        got = sum(matched[(rank, s)] for s in sources)
        by_source = ", ".join(f"{matched[(rank, s)]} from rank {s}" for s in sources)
        print(f"rank {rank}: {ops['isend']} sends, {ops['irecv']} receives: {got} matched "
              f"({by_source}), {ops['irecv'] - got} never matched")


def hang_summary(exc):
    """Per rank: the call it was stuck in, and how many of its receives never completed."""
    for rank, status in sorted(exc.statuses.items()):
        blocked = status.blocked_in.describe() if status.blocked_in else "(no call)"
        receives = sum(e.op == "irecv" for e in status.outstanding)
        print(f"rank {rank}: blocked in {blocked}; {receives} of its receives still pending")
