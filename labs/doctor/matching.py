"""Which send met which receive: gloo's rule (FIFO per sender, receiver and tag), or NCCL's
(FIFO per sender and receiver: NCCL ignores tags)."""
from __future__ import annotations

from labs.harness.ranks.calls import fifo_pairs


def match(runs: dict, tags: bool = True) -> dict:
    """{id(call): partner call} both ways, over every posted point-to-point call."""
    sends, recvs, anys = [], [], []
    for run in runs.values():
        for c in run.calls:
            if c.raised or not c.p2p or c.peer == c.rank:
                continue
            if c.kind == "send":
                sends.append(((c.rank, c.peer, c.tag if tags else 0), c))
            elif c.peer is None:
                anys.append(c)
            else:
                recvs.append(((c.peer, c.rank, c.tag if tags else 0), c))
    pairs, left = fifo_pairs(sends, recvs)
    for q in anys:
        key = next((k for k in sorted(left) if k[1] == q.rank and left[k]
                    and (not tags or k[2] == q.tag)), None)
        if key is not None:
            pairs.append((left[key].popleft(), q))
    out = {}
    for s, q in pairs:
        out[id(s)], out[id(q)] = q, s
    return out
