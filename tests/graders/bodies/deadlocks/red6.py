"""Red team I: lesson 04 bodies."""
import torch
import torch.distributed as dist

_memo = {}


def exchange_batched_memo_same_object(tensor, peer):
    """WRONG: skips the exchange when called again with the same tensor object, unchanged
    (same id and version counter), and returns the peer's tensor from last time: the peer's
    tensor may have changed (and the peer, which does exchange, hangs). The graders pass a
    new tensor every call, and the second call gets copies, so the memo never hits."""
    key = (id(tensor), peer)
    hit = _memo.get(key)
    if hit is not None and hit[0] is tensor and hit[1] == tensor._version:
        return hit[2].clone()
    received = torch.empty_like(tensor)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                     dist.P2POp(dist.irecv, received, peer)]):
        w.wait()
    _memo[key] = (tensor, tensor._version, received.clone())
    return received


def parity_ordered_any_source_recv(tensor, peer):
    """RIGHT: parity order with blocking send/recv (src/dst named), the receive buffer from
    tensor.new_empty, the send a view of `tensor` (same memory, same bytes)."""
    received = tensor.new_empty(tensor.shape)
    if dist.get_rank() % 2 == 0:
        dist.send(tensor.view(tensor.shape), dst=peer)
        dist.recv(received, src=peer)
    else:
        dist.recv(received, src=peer)
        dist.send(tensor.view(tensor.shape), dst=peer)
    return received
