"""Which send met which receive: gloo's rule (FIFO per group, sender, receiver and tag), or
NCCL's (FIFO per group, sender and receiver: NCCL ignores tags).

Every process group has its own gloo context or NCCL communicator (torch 2.13
distributed_c10d.py `_new_process_group_helper` makes a backend object per group), so a send
on one group never meets a receive on another, as MPI matches per communicator. Peers are
global ranks on every group."""
from __future__ import annotations

from labs.harness.ranks.calls import fifo_pairs


def match(runs: dict, tags: bool = True) -> dict:
    """{id(call): partner call} both ways, over every posted point-to-point call."""
    sends, recvs, anys = [], [], []
    for run in runs.values():
        for c in run.calls:
            if c.raised or not c.p2p or c.peer == c.rank:
                continue
            tag = c.tag if tags else 0
            if c.kind == "send":
                sends.append(((c.group, c.rank, c.peer, tag), c))
            elif c.peer is None:
                anys.append(c)
            else:
                recvs.append(((c.group, c.peer, c.rank, tag), c))
    pairs, left = fifo_pairs(sends, recvs)
    for q in anys:            # the sender it came from, when its wait told; else the first
        key = next((k for k in sorted(left, key=lambda k: k[1] != q.source) if left[k]
                    and k[0] == q.group and k[2] == q.rank and (not tags or k[3] == q.tag)),
                   None)
        if key is not None:
            pairs.append((left[key].popleft(), q))
    out = {}
    for s, q in pairs:
        out[id(s)], out[id(q)] = q, s
    return out
