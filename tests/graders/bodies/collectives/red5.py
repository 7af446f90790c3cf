"""Red team F: collectives bodies."""
import itertools

import torch
import torch.distributed as dist
from torch.distributed.elastic.utils.store import synchronize

_CALLS = itertools.count()


def _run(ops):
    for w in dist.batch_isend_irecv(ops) if ops else []:
        w.wait()


def _to_bytes(t):
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def broadcast_via_torch_store_helper(tensor, src):
    """WRONG: runs the star on DUMMY data (src sends zeros) and takes the real values from
    the rendezvous store through torch's own elastic helper `synchronize` (store.set/get
    called from torch's code, so the store guard does not see the body)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    key = f"redF/bcast/{next(_CALLS)}/"
    if rank == src:
        _run([dist.P2POp(dist.isend, torch.zeros_like(tensor), p) for p in range(ws) if p != src])
    else:
        _run([dist.P2POp(dist.irecv, torch.empty_like(tensor), src)])
    store = dist.distributed_c10d._get_default_store()
    everyone = synchronize(store, _to_bytes(tensor) if rank == src else b"", rank, ws, key)
    if rank != src:
        raw = torch.frombuffer(bytearray(everyone[src]), dtype=torch.uint8)
        tensor.copy_(raw.view(tensor.dtype).reshape(tensor.shape))
    return tensor


def gather_negates_via_data(tensor, dst):
    """WRONG: the catalogue's gather_negates_for_a_moment (sends -tensor negated IN PLACE,
    negates it back) done through `tensor.data`, whose writes the version counter misses."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    tensor.data.neg_()
    try:
        if rank != dst:
            _run([dist.P2POp(dist.isend, tensor, dst)])
            return None
        out = [torch.empty_like(tensor) for _ in range(ws)]
        _run([dist.P2POp(dist.irecv, out[p], p) for p in range(ws) if p != dst])
        for p in range(ws):
            if p != dst:
                out[p].neg_()
    finally:
        tensor.data.neg_()
    out[dst] = tensor.clone()
    return out


def all_to_all_via_temporaries(outputs, inputs):
    """RIGHT: receives into fresh temporaries in one batch, waits, then copy_ each into
    the caller's outputs (its own slot too)."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    temps = {p: torch.empty_like(outputs[p]) for p in range(ws) if p != rank}
    ops = [op for p in temps for op in (dist.P2POp(dist.irecv, temps[p], p),
                                        dist.P2POp(dist.isend, inputs[p], p))]
    _run(ops)
    outputs[rank].copy_(inputs[rank])
    for p, t in temps.items():
        outputs[p].copy_(t)
    return outputs
