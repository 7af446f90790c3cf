"""Lesson 09 (the 1F1B neighbour exchange, rotate_kv): wrong bodies, and correct ones in
another style. The exchange bodies serve both directions (they are symmetric)."""
import torch
import torch.distributed as dist

from tests.graders.bodies._shared import neighbours as _ring


def exchange_blocking(tensor, peer):
    """Blocking send, then receive: both neighbours send at the same moment and hang."""
    received = torch.empty_like(tensor)
    dist.send(tensor, peer)
    dist.recv(received, peer)
    return received


def exchange_parity_nonblocking(tensor, peer):
    """Wrong: Megatron-LM's unbatched path, isend/irecv ordered by GLOBAL rank parity:
    stages on ranks 0 and 2 are both even, so both send first, ungrouped, which NCCL needs
    grouped; and empty_like of a transposed view is not contiguous."""
    received = torch.empty_like(tensor)
    if dist.get_rank() % 2 == 0:
        works = [dist.isend(tensor.contiguous(), peer), dist.irecv(received, peer)]
    else:
        works = [dist.irecv(received, peer), dist.isend(tensor.contiguous(), peer)]
    for work in works:
        work.wait()
    return received


def rotate_tags_crossed(k, v):
    """Tagged sends, but the receives' tags swapped: K arrives in v_next and V in k_next."""
    nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt, tag=1),
                                    dist.P2POp(dist.isend, v, nxt, tag=2),
                                    dist.P2POp(dist.irecv, k_next, prev, tag=2),
                                    dist.P2POp(dist.irecv, v_next, prev, tag=1)])
    return k_next, v_next, works


def rotate_waits(k, v):
    """Right values, but it waits inside: nothing is left to overlap with the attention."""
    nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, k, nxt), dist.P2POp(dist.isend, v, nxt),
                                    dist.P2POp(dist.irecv, k_next, prev),
                                    dist.P2POp(dist.irecv, v_next, prev)])
    for work in works:
        work.wait()
    return k_next, v_next, works


def rotate_receives_first_tagged(k, v):
    """Correct: receives first, K and V told apart by tags (ring-flash-attention style)."""
    nxt, prev = _ring()
    k_next, v_next = torch.empty_like(k), torch.empty_like(v)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, k_next, prev, tag=1),
                                    dist.P2POp(dist.irecv, v_next, prev, tag=2),
                                    dist.P2POp(dist.isend, k, nxt, tag=1),
                                    dist.P2POp(dist.isend, v, nxt, tag=2)])
    return k_next, v_next, works
