"""Red team F: waiting bodies."""
import torch
import torch.distributed as dist

from labs.harness.ranks.tracing import span
from tests.graders.bodies._shared import neighbours as _ring

_DELTA = {}


def _wait(works):
    for w in works:
        w.wait()


def shift_delta_encoded(tensor):
    """WRONG: keeps state between calls and sends only the DIFFERENCE from the tensor it
    sent last time (per shape and dtype); the receiver adds it to what it returned last
    time. The messages are not `tensor`, a partner running the lesson's code gets garbage,
    and floats cancel: after a call with values ~1e8, a call with values ~1 returns 0."""
    nxt, prv = _ring()
    key = (tuple(tensor.shape), tensor.dtype)
    sent, got = _DELTA.get(key, (torch.zeros_like(tensor), torch.zeros_like(tensor)))
    delta = tensor - sent
    incoming = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, delta, nxt),
                                  dist.P2POp(dist.irecv, incoming, prv)]))
    result = got + incoming
    _DELTA[key] = (tensor.clone(), result.clone())
    return result


def shift_scratch_in_input_data(tensor):
    """WRONG: sends a copy and receives INTO THE CALLER'S TENSOR through `.data` (whose
    writes do not bump the version counter), copies the result out and puts the input back:
    the caller's tensor is overwritten for the duration of the call (what the harness calls
    'wrote into its argument and put its values back')."""
    nxt, prv = _ring()
    saved = tensor.clone()
    scratch = tensor.data
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, saved, nxt),
                                  dist.P2POp(dist.irecv, scratch, prv)]))
    result = scratch.clone()
    scratch.copy_(saved)
    return result


def shift_blocking_chain(tensor):
    """RIGHT: blocking send/recv ordered like the token ring: rank 0 sends first then
    receives, every other rank receives first then sends. No cycle of waiting ranks."""
    rank = dist.get_rank()
    nxt, prv = _ring()
    out = torch.empty_like(tensor)
    if rank == 0:
        dist.send(tensor, dst=nxt)
        dist.recv(out, src=prv)
    else:
        dist.recv(out, src=prv)
        dist.send(tensor, dst=nxt)
    return out


def _post(block, recv_buf):
    nxt, prv = _ring()
    return dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                   dist.P2POp(dist.irecv, recv_buf, prv)])


def step_column_halves(block, weight, recv_buf):
    """RIGHT: the product computed in flight in two COLUMN halves of the weight, then cat
    (the row-halves version is in the catalogue as right)."""
    works = _post(block, recv_buf)
    h = weight.shape[1] // 2
    with span("matmul"):
        product = torch.cat([block @ weight[:, :h], block @ weight[:, h:]], dim=1)
    _wait(works)
    return product


def step_split_k(block, weight, recv_buf):
    """RIGHT: the product in flight as two partial products over halves of the inner
    dimension k, summed (split-K, as blocked GEMMs do)."""
    works = _post(block, recv_buf)
    h = weight.shape[0] // 2
    with span("matmul"):
        product = block[:, :h] @ weight[:h] + block[:, h:] @ weight[h:]
    _wait(works)
    return product


def step_broadcast_multiply_sum(block, weight, recv_buf):
    """RIGHT: the product in flight as a broadcast multiply and a sum over k."""
    works = _post(block, recv_buf)
    with span("matmul"):
        product = (block.unsqueeze(-1) * weight).sum(dim=1)
    _wait(works)
    return product


def step_product_before_posting(block, weight, recv_buf):
    """WRONG: the real product is computed BEFORE posting (by weight columns, which the
    trace does not see), then a one-row product runs in flight: no overlap at all."""
    h = weight.shape[1] // 2
    product = torch.cat([block @ weight[:, :h], block @ weight[:, h:]], dim=1)
    works = _post(block, recv_buf)
    block[:1] @ weight
    _wait(works)
    return product
