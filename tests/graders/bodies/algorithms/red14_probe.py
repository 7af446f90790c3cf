"""Round 14 (ours): wrong kinds no list named, each caught by the graders as they are: requests
waited before they are handed back, a tree that serves its largest subtree last, a stage's
send and receive in two batches (both stages send first: a real deadlock on gloo too).

(Lesson `algorithms`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red14_probe.py.)
"""
import torch.distributed as dist


# WRONG: the children served largest subtree last (descending masks): more rounds.
def tree_children_descending(tensor, src):
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    if v:
        dist.recv(tensor, (v - (1 << (v.bit_length() - 1)) + src) % p)
    masks, mask = [], 1 << v.bit_length()
    while v + mask < p:
        masks.append(mask)
        mask <<= 1
    for m in reversed(masks):
        dist.send(tensor, (v + m + src) % p)
    return tensor

