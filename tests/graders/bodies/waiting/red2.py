"""Second red team (lessons 01-04, 07-09): waiting.py bodies."""
import torch
import torch.distributed as dist
import torch.nn.functional as F

from labs.harness.ranks.tracing import span
from tests.graders.bodies._shared import neighbours as _ring


def _wait(works):
    for w in works:
        w.wait()


_PAIRS = {}


def shift_double_buffered(tensor):
    """WRONG: lesson 03's double buffering applied to the result: two receive buffers per
    (shape, dtype), kept across calls and used in turn ("never a fresh allocation per
    step"). The third call of a shape overwrites what the first returned."""
    nxt, prev = _ring()
    key = (tuple(tensor.shape), tensor.dtype)
    pair = _PAIRS.setdefault(key, [torch.empty_like(tensor), torch.empty_like(tensor), 0])
    received = pair[pair[2]]
    pair[2] ^= 1
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                  dist.P2POp(dist.irecv, received, prev)]))
    return received


def step_linear(block, weight, recv_buf):
    """RIGHT: the product as F.linear(block, weight.T) (nn.Linear's way, weight transposed)."""
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    with span("matmul"):
        out = F.linear(block, weight.T)
    _wait(works)
    return out


def step_transposed_product(block, weight, recv_buf):
    """RIGHT: (weight^T @ block^T)^T, the same product by the transpose identity."""
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    out = (weight.T @ block.T).T
    _wait(works)
    return out


def step_row_chunks(block, weight, recv_buf):
    """RIGHT: the product computed in two row halves while the transfer flies."""
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    half = block.shape[0] // 2
    out = torch.cat([block[:half] @ weight, block[half:] @ weight])
    _wait(works)
    return out


def step_isend_irecv_explicit_group(block, weight, recv_buf):
    """RIGHT: dist.irecv / dist.isend with group=None passed explicitly, torch.mm."""
    nxt, prev = _ring()
    r = dist.irecv(recv_buf, src=prev, group=None)
    s = dist.isend(block, dst=nxt, group=None)
    out = torch.mm(block, weight)
    r.wait()
    s.wait()
    return out


def shift_empty_plus_copy(tensor):
    """RIGHT: received into torch.empty(shape, dtype=...), sends first, then receive, blocking
    send/recv ordered by rank parity, plus a harmless barrier."""
    nxt, prev = _ring()
    out = torch.empty(tensor.shape, dtype=tensor.dtype)
    works = [dist.isend(tensor, nxt), dist.irecv(out, prev)]
    dist.barrier()
    for w in reversed(works):
        w.wait()
    return out


def step_row_quarters(block, weight, recv_buf):
    """RIGHT: the product computed in four row blocks while the transfer flies."""
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    out = torch.cat([part @ weight for part in block.chunk(4)])
    _wait(works)
    return out
