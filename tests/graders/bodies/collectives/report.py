"""Lesson 07, issue 52 item 4: a body whose failing cases share one cause, for the report
that names it (labs/harness/grading/evidence.py)."""
import torch
import torch.distributed as dist


def all_gather_copies_floor_chunks(tensor):
    """A right ring (each received tensor forwarded whole: the method's messages), each
    copied into its slot in p chunks of numel // p elements: the last numel % p elements of
    every received slot keep what the slot was made of (a copy of this rank's own tensor)."""
    rank, p = dist.get_rank(), dist.get_world_size()
    out = [tensor.clone() for _ in range(p)]
    n = tensor.numel() // p
    nxt, prv = (rank + 1) % p, (rank - 1) % p
    outgoing = tensor
    for step in range(p - 1):
        incoming = torch.empty_like(tensor)
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, outgoing, nxt),
                                            dist.P2POp(dist.irecv, incoming, prv)]):
            work.wait()
        outgoing = incoming
        slot = out[(rank - step - 1) % p].view(-1)
        for c in range(p):
            slot[c * n:(c + 1) * n].copy_(incoming.view(-1)[c * n:(c + 1) * n])
    return out
