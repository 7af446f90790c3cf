"""More wrong bodies of the second round, one or two per exercise, of the kinds a learner
writes: another door (a subgroup, an object collective, a store), other partners (any
source, a reversed ring, a flood), the bytes of another dtype, a branch on the world size,
requests left behind, a blocking order that hangs at some world sizes only.

(Lesson `snippets`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted3.py.)
"""
import torch
import torch.distributed as dist



def _wait(works):
    for work in works:
        work.wait()


def fixed_average_in_float32(model):
    """Snippet 3 fixed, but every gradient travels as float32."""
    rank, n = dist.get_rank(), dist.get_world_size()
    grads = [p.grad for p in model.parameters()]
    wire = [g.float() for g in grads]
    peers = [p for p in range(n) if p != rank]
    inbox = {peer: [torch.empty_like(w) for w in wire] for peer in peers}
    ops = [op for peer in peers for w, b in zip(wire, inbox[peer])
           for op in (dist.P2POp(dist.isend, w, peer), dist.P2POp(dist.irecv, b, peer))]
    if ops:
        _wait(dist.batch_isend_irecv(ops))
    for k, p in enumerate(model.parameters()):
        total = grads[k].clone()
        for peer in peers:
            total += inbox[peer][k].to(total.dtype)
        p.grad = total / n
