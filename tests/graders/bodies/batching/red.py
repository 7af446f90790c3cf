"""Red-team bodies, as they were
written; listed in tests/harness/catalogue/."""
import torch
import torch.distributed as dist
from labs.batching import DATA_TAG, SIZE_TAG


def _wait(works):
    for w in works:
        w.wait()


# ---------------------------------------------------------------- WRONG
def pairs_no_contiguous(chunks):
    """WRONG on strided chunks: the reference's two phases, without .contiguous() (a 1-D
    view like x[::2] is a valid chunk; gloo refuses to send it)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    peers = [p for p in range(ws) if p != rank]
    out = [None] * ws
    out[rank] = chunks[rank].clone()
    if not peers:
        return out
    mine = {p: torch.tensor([chunks[p].numel()]) for p in peers}
    theirs = {p: torch.zeros(1, dtype=torch.int64) for p in peers}
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine[p], p, tag=SIZE_TAG) for p in peers]
                                 + [dist.P2POp(dist.irecv, theirs[p], p, tag=SIZE_TAG) for p in peers]))
    for p in peers:
        out[p] = torch.empty(int(theirs[p]), dtype=chunks[rank].dtype)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, chunks[p], p, tag=DATA_TAG) for p in peers]
                                 + [dist.P2POp(dist.irecv, out[p], p, tag=DATA_TAG) for p in peers]))
    return out


# ---------------------------------------------------------------- RIGHT


