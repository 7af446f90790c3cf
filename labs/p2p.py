"""Lesson 01: point to point. The worker functions notebook 01 launches.

    first_send          dist.send / dist.recv: rank 0 sends to every other rank by global rank
    nonblocking_pair    dist.isend / dist.irecv return a Work: is_completed(), wait()
    completion_on_gloo  on gloo a point-to-point Work says it is completed only after wait()
    touch_before_wait   buffer ownership: a send buffer changed before wait() sends the change
    read_before_wait    ... and a receive buffer read before wait() holds nothing useful yet
    rendezvous_send     gloo's send returns only once the receiver has posted its recv
    any_source          recv/irecv with src=None take a message from whichever rank sends
    ping_pong_run, token_ring_run   run the two exercises

Notebook side (rendezvous_send's timeline plot and its widget): labs.views.p2p.

Exercises (write the bodies; `make check` grades them):
    ping_pong(tensor, rounds)   bounce a tensor between ranks 0 and 1
    pass_token(token)           pass a token around the ring, every rank adds its rank
"""
import contextlib
import os
import re
import tempfile
import time

import torch
import torch.distributed as dist

from labs.harness.commands import cli
from labs.harness.ranks.exercises import exercise, todo
from labs.harness.ranks.tracing import span


# -- 1. send / recv ----------------------------------------------------------------------

def first_send(rank, world_size):
    """Rank 0 sends a different tensor to each other rank; they receive from rank 0."""
    if rank == 0:
        for dst in range(1, world_size):
            payload = torch.tensor([10.0 * dst, 10.0 * dst + 1])
            dist.send(payload, dst=dst)          # dst: the receiver's (global) rank
            print(f"sent {payload.tolist()} to rank {dst}")
        return None
    buf = torch.zeros(2)                         # the receiver owns the memory
    dist.recv(buf, src=0)                        # src: the sender's (global) rank
    print(f"received {buf.tolist()} from rank 0")
    return buf


# -- 2. isend / irecv and Work -------------------------------------------------------------

def nonblocking_pair(rank, world_size):
    """isend/irecv return at once with a Work; wait() blocks until the op is done.

    The barrier is a handshake for the demo only: rank 1 posts its irecv after rank 0 has
    looked at its Work, so what rank 0 prints does not depend on timing.
    """
    if rank == 0:
        work = dist.isend(torch.arange(4.0), dst=1)
        print("isend returned; is_completed():", work.is_completed())
        dist.barrier()
        print("wait() returned:", work.wait())
        print("after wait, is_completed():", work.is_completed())
        return None
    if rank == 1:
        buf = torch.zeros(4)
        dist.barrier()
        work = dist.irecv(buf, src=0)
        work.wait()
        print("after wait, is_completed():", work.is_completed(), "buf:", buf.tolist())
        return buf
    dist.barrier()
    return None


def _poll(work, seconds):
    """Ask work.is_completed() over and over for `seconds`: was it ever True?"""
    deadline = time.monotonic() + seconds
    seen = False
    while time.monotonic() < deadline:
        seen |= work.is_completed()
        time.sleep(0.001)
    return seen


def completion_on_gloo(rank, world_size, poll_seconds=0.3):
    """When does a gloo point-to-point Work say is_completed()? Ranks 0 and 1.

    1. Rank 0 isends; rank 1 takes the data with a blocking recv. Only after that (the
       barrier orders it) rank 0 polls is_completed() for `poll_seconds`, then waits.
    2. Rank 1 posts an irecv, rank 0 sends; rank 1 watches its buffer until the data is
       there, polls is_completed() for `poll_seconds`, then waits.
    Returns {"isend" or "irecv": (True seen while polling, is_completed() after wait)};
    rank 1's dict also says whether the data was in its buffer before wait().
    """
    if rank == 0:
        work = dist.isend(torch.ones(3), dst=1)
        dist.barrier()                           # rank 1's blocking recv has returned
        polled = _poll(work, poll_seconds)
        print(f"isend, the peer's recv has returned: is_completed() polled for "
              f"{poll_seconds:g} s was {'True at least once' if polled else 'always False'}")
        work.wait()
        print("isend, after wait(): is_completed() =", work.is_completed())
        dist.send(torch.full((3,), 2.0), dst=1)
        dist.barrier()
        return {"isend": (polled, work.is_completed())}
    if rank == 1:
        dist.recv(torch.zeros(3), src=0)
        dist.barrier()
        buf = torch.zeros(3)
        work = dist.irecv(buf, src=0)
        deadline = time.monotonic() + 5.0
        while not bool((buf == 2.0).all()) and time.monotonic() < deadline:
            time.sleep(0.001)                    # gloo writes the buffer in the background
        arrived = bool((buf == 2.0).all())
        polled = _poll(work, poll_seconds)
        print(f"irecv, data already in the buffer ({arrived}): is_completed() polled for "
              f"{poll_seconds:g} s was {'True at least once' if polled else 'always False'}")
        work.wait()
        print("irecv, after wait(): is_completed() =", work.is_completed())
        dist.barrier()
        return {"irecv": (polled, work.is_completed()), "arrived": arrived}
    dist.barrier()
    dist.barrier()
    return None


def touch_before_wait(rank, world_size, fixed=False):
    """Rank 0 changes its send buffer after isend but before wait: what does rank 1 get?

    With fixed=True rank 0 sends a copy it never touches, and keeps working on the original.
    The barrier makes the outcome certain: rank 1 posts its recv only after rank 0's change.
    """
    if rank == 0:
        grads = torch.ones(4)
        work = dist.isend(grads.clone() if fixed else grads, dst=1)
        grads.mul_(100)                  # "the next step" reuses the buffer too early
        dist.barrier()
        work.wait()
        return grads
    if rank == 1:
        buf = torch.zeros(4)
        dist.barrier()
        dist.recv(buf, src=0)
        print("received:", buf.tolist())
        return buf
    dist.barrier()
    return None


def read_before_wait(rank, world_size):
    """Rank 1 reads its irecv buffer before wait(): the data is not there yet."""
    if rank == 0:
        dist.barrier()                   # send only after rank 1 has looked at its buffer
        dist.send(torch.full((4,), 7.0), dst=1)
        return None
    if rank == 1:
        buf = torch.zeros(4)
        work = dist.irecv(buf, src=0)
        print("before wait:", buf.tolist())
        dist.barrier()
        work.wait()
        print("after wait: ", buf.tolist())
        return buf
    dist.barrier()
    return None


# -- 3. gloo's send is a rendezvous ---------------------------------------------------------

def rendezvous_send(rank, world_size, delay=0.3, numel=10):
    """Rank 0 calls a blocking send at once; rank 1 sleeps `delay` s, then posts its recv."""
    if rank == 0:
        dist.send(torch.ones(numel), dst=1)
    elif rank == 1:
        with span("sleep"):
            time.sleep(delay)
        dist.recv(torch.empty(numel), src=0)


# -- 4. receiving from any source -----------------------------------------------------------

_CPP_LOG_PREFIX = re.compile(r"^\[rank\d+\]:\[W[^\]]*\]\s*")


@contextlib.contextmanager
def captured_stderr(lines):
    """Collect what C++ code writes to stderr (fd 2) into `lines`, without timestamps."""
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            for line in tmp.read().decode(errors="replace").splitlines():
                lines.append(_CPP_LOG_PREFIX.sub("", line).split(" (function")[0])


def any_source(rank, world_size):
    """Rank 0 receives one message from every other rank, twice, without naming the sender.

    Each sender sends `10 * rank`. Round 1: rank 0 uses blocking recv(src=None), which
    returns the sender's rank. Round 2: irecv(src=None), then Work.source_rank(). The
    barrier between the rounds keeps them apart. Returns [(call, sender, value), ...].
    """
    if rank != 0:
        dist.send(torch.tensor([10.0 * rank]), dst=0)
        dist.barrier()
        dist.send(torch.tensor([10.0 * rank]), dst=0)
        return None
    got, warnings = [], []
    buf = torch.zeros(1)
    for _ in range(world_size - 1):
        sender = dist.recv(buf)                  # src=None: any source; returns the sender
        got.append(("recv", sender, buf.item()))
    dist.barrier()
    for _ in range(world_size - 1):
        work = dist.irecv(buf)                   # src=None
        work.wait()
        with captured_stderr(warnings):
            sender = work.source_rank()          # who sent it (a deprecated API, see notebook)
        got.append(("irecv", sender, buf.item()))
    for w in dict.fromkeys(warnings):            # torch prints its deprecation note once
        print("torch says:", w)
    return got


# -- 5. exercises ------------------------------------------------------------------------------

@exercise
def ping_pong(tensor, rounds):
    """Bounce a tensor between ranks 0 and 1, `rounds` times; time each round trip.

    Every rank calls it with a tensor of the same shape and a numeric dtype (float or
    integer, any shape, contiguous); only rank 0's values matter, the others' give shape
    and dtype.
    One round: rank 0 sends its current tensor to rank 1; rank 1 receives it into a
    fresh buffer, adds 1 and sends the result back; rank 0 receives that reply, which is
    what it sends in the next round. Rank 0 starts from `tensor` and never modifies it.

    Returns
      rank 0:      (replies, seconds): the `rounds` tensors rank 0 received, in order
                   (so replies[i] == tensor + i + 1), and the `rounds` round-trip times in
                   seconds (time.perf_counter() around one send + one recv).
      rank 1:      the list of the `rounds` tensors it received (tensor + i for round i).
      other ranks: None (they take no part).

    Hint: blocking dist.send / dist.recv are enough; rank 0 sends first, rank 1 receives
    first. Receive into torch.empty_like(tensor), a new buffer every round.
    """
    raise todo("notebook 01, 'Exercise 1: ping-pong'")


@exercise
def pass_token(token):
    """Pass a token once around the ring 0 -> 1 -> ... -> world_size-1 -> 0.

    Every rank calls it with a tensor of the same shape and dtype; only rank 0's value
    matters (it is the starting token). Rank 0 sends its token to rank 1; each rank r > 0
    receives the token from rank r-1, adds r to it and sends it to rank (r+1) % world_size;
    finally rank 0 receives it from the last rank. Do not modify `token`.

    Returns a new tensor on every rank: the token as this rank last held it, so rank 0
    returns token + (0 + 1 + ... + world_size-1) and rank r > 0 returns
    token + (1 + ... + r). Any world size; with world size 1 there is nobody to pass to
    (gloo cannot send to your own rank): return a copy of the token.

    Hint: dist.get_rank() / dist.get_world_size(); who must send first, so that no two
    ranks wait for each other?
    """
    raise todo("notebook 01, 'Exercise 2: pass a token around the ring'")


def ping_pong_run(rank, world_size, rounds=5, numel=16):
    """Run the ping_pong exercise on a seeded tensor; rank 0 returns (start, replies, seconds)."""
    start = torch.randint(0, 100, (numel,), generator=torch.Generator().manual_seed(0)).float()
    result = ping_pong(start, rounds)
    return (start, *result) if rank == 0 else result


def token_ring_run(rank, world_size, start=100):
    """Run the pass_token exercise; every rank returns the value it last held."""
    return pass_token(torch.tensor([float(start)])).item()


# -- command line / torchrun ----------------------------------------------------------------

def demo(rank, world_size):
    """Lesson 01 demo: each rank isends its rank to the next rank and irecvs from the previous."""
    nxt, prev = (rank + 1) % world_size, (rank - 1) % world_size
    buf = torch.zeros(1)
    recv = dist.irecv(buf, src=prev)
    send = dist.isend(torch.tensor([float(rank)]), dst=nxt)
    send.wait()
    recv.wait()
    return f"got {buf.item():g} from rank {prev}"


if __name__ == "__main__":
    cli.main(demo)
