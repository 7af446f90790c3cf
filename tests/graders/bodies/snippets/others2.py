"""Correct bodies in other styles, second round, part 2 (lessons 08-10): see others.py.

(Lesson `snippets`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/others2.py.)
"""
import torch
import torch.distributed as dist



def _wait(works):
    for work in works:
        work.wait()


# lesson 08 ------------------------------------------------------------------------------------

def fixed_flat_receives_first(model):
    """Snippet 3 fixed with one flat buffer per peer, receives posted first, one batch."""
    rank, n = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    peers = [p for p in range(n) if p != rank]
    inbox = {peer: torch.empty_like(flat) for peer in peers}
    ops = [dist.P2POp(dist.irecv, inbox[p], p) for p in peers] + \
        [dist.P2POp(dist.isend, flat, p) for p in peers]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    mean = flat.clone()
    for peer in peers:
        mean += inbox[peer]
    mean /= n
    for p, piece in zip(params, mean.split([p.numel() for p in params])):
        p.grad = piece.view_as(p.grad).clone()
