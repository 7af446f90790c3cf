"""A correct exchange whose main() still holds the group when it destroys it: its list of
P2POps (each keeps its `.group`) and a name for the group. destroy_process_group() then frees
nothing: the group's gloo threads run until interpreter shutdown (lesson 11, section 5).

    python -m labs.doctor --nproc-per-node 2 holds_group_locals.py          # a note naming both
    python -m labs.doctor --nproc-per-node 2 holds_group_locals.py --del    # the fix: no note

--del: the fix the doctor suggests, `del ops, group` before destroy_process_group().
"""
import sys

import torch
import torch.distributed as dist


def main():
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    group = dist.group.WORLD
    mine, theirs = torch.full((10,), float(rank)), torch.empty(10)
    ops = [dist.P2POp(dist.isend, mine, (rank + 1) % n, group),
           dist.P2POp(dist.irecv, theirs, (rank - 1) % n, group)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    assert theirs[0].item() == (rank - 1) % n
    if "--del" in sys.argv:
        del ops, group
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
