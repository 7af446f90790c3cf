"""Round 15 (ours): bodies for the exercises the catalogue held least of (lessons 02, 04, 07
and 10), in kinds no list named: another algorithm than the one the exercise asks for (a
chain, a two-way ring, a relay for some k), a result that replaces the caller's memory
instead of filling it, sizes sent in another dtype of the same width, requests waited on one
side only, the own slot handed back as the input itself, one batch per peer where the
contract says one.

(Lesson `deadlocks`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red15_probe.py.)
"""
import torch
import torch.distributed as dist



# ---- lesson 04 ------------------------------------------------------------------------

# WRONG: "parity" taken from the lower rank of the pair: with pairs (1, 2) rank 1 (odd) sends
# first. Never deadlocks, but it is not the parity order the exercise asks for.
def parity_by_lower_rank(tensor, peer):
    received = torch.empty_like(tensor)
    if dist.get_rank() < peer:
        dist.send(tensor, dst=peer)
        dist.recv(received, src=peer)
    else:
        dist.recv(received, src=peer)
        dist.send(tensor, dst=peer)
    return received


# WRONG: the exchange's send as isend, waited only after the receive.
def parity_isend_waited_late(tensor, peer):
    received = torch.empty_like(tensor)
    if dist.get_rank() % 2 == 0:
        work = dist.isend(tensor, dst=peer)
        dist.recv(received, src=peer)
        work.wait()
    else:
        dist.recv(received, src=peer)
        dist.send(tensor, dst=peer)
    return received
