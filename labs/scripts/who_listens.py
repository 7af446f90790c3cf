"""Who can reach a torchrun job? Rank 0 lists the addresses its torchrun agent (its parent
process: it hosts the rendezvous store) and the ranks' gloo listen on, ports left out.

    torchrun --standalone --nproc-per-node=2 labs/scripts/who_listens.py

127.0.0.1 is this machine only; "every interface" is anyone who can reach this machine.
Reads Linux's /proc; needs no file from this course.
"""
import os

import torch.distributed as dist

LISTEN = "0A"        # the TCP state LISTEN in /proc/net/tcp


def listening_addresses(pid: int) -> set[str]:
    """The addresses (no ports) of the TCP sockets process `pid` listens on."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:           # closed meanwhile (listdir's own fd, for one)
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("tcp", "tcp6"):
        with open(f"/proc/net/{table}") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == LISTEN and fields[9] in inodes:
                    found.add(readable(fields[1].split(":")[0]))
    return found


def readable(hex_ip: str) -> str:
    if hex_ip in ("00000000", "0" * 32):
        return "every interface"
    if len(hex_ip) == 8:
        return ".".join(str(int(hex_ip[i:i + 2], 16)) for i in (6, 4, 2, 0))
    return "::1" if hex_ip == "0" * 24 + "01000000" else "an IPv6 address"


def main():
    dist.init_process_group("gloo")
    mine = ", ".join(sorted(listening_addresses(os.getpid())))
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, mine)           # gloo's listeners are all up by now
    if dist.get_rank() == 0:
        agent = ", ".join(sorted(listening_addresses(os.getppid())))
        print(f"torchrun's agent (the rendezvous store) listens on: {agent}")
        for rank, where in enumerate(every):
            print(f"rank {rank} (gloo) listens on: {where}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
