"""Lesson 02: P2POp and batch_isend_irecv. The worker functions notebook 02 launches.

    anatomy             the fields of a P2POp (op, tensor, peer, group, tag, group_peer)
    validation_errors   every mistake P2POp / batch_isend_irecv check for, and their errors
    unchecked_peer      a peer that does not exist is accepted when the op is built
    ungrouped_exchange  isend then irecv to each other without a batch (fine on gloo)
    batch_on_gloo       on gloo a batch is its ops posted one by one: one Work per op
    order_inside_batch  sends and receives of one batch may be listed in any order
    fifo_same_pair      repeated ops between the same pair and direction match in order
    tags_out_of_order   gloo matches by tag: messages can be received out of order
    subgroup_peers      peer is a global rank, group_peer a rank inside the group
    neighbours_run, ring_shift_run, ring_shifts_run, all_pairs_run   run the exercises

Notebook side (ring_shift's print-out and its widget): labs.views.batching.

Exercises (write the bodies; `make check` grades them):
    exchange_with_neighbours(tensor)   -> (from_left, from_right)
    ring_shift(tensor, k)              -> the tensor of rank (rank - k) mod world_size
    all_pairs_exchange(chunks)         -> one chunk from every rank, sizes sent first
"""
import re

import torch
import torch.distributed as dist

from labs.harness.commands import cli
from labs.harness.ranks.exercises import exercise, todo

SIZE_TAG = 1    # all_pairs_exchange: tag of the messages that carry a chunk's length
DATA_TAG = 2    # all_pairs_exchange: tag of the messages that carry a chunk


def _error_text(exc):
    """'ValueError: message' on one line, without object addresses."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {re.sub(r' <[^>]*object at 0x[0-9a-f]+>', '', text)}"


# -- 1. what a P2POp is ------------------------------------------------------------------

def describe(op):
    """The fields of a P2POp, one line."""
    group = "WORLD" if op.group is dist.group.WORLD else f"group {dist.get_process_group_ranks(op.group)}"
    return (f"op={op.op.__name__}, tensor={tuple(op.tensor.shape)} "
            f"{str(op.tensor.dtype).replace('torch.', '')}, peer={op.peer}, group={group}, "
            f"tag={op.tag}, group_peer={op.group_peer}")


def anatomy(rank, world_size):
    """Rank 0 builds a send and a receive description and prints their fields.

    Building a P2POp communicates nothing: it is a description that batch_isend_irecv
    posts later.
    """
    if rank != 0:
        return None
    send = dist.P2POp(dist.isend, torch.arange(3.0), peer=1, tag=7)
    recv = dist.P2POp(dist.irecv, torch.zeros(3), peer=1)
    print("send:", describe(send))
    print("recv:", describe(recv))
    print("repr:", repr(send))
    far = dist.P2POp(dist.isend, torch.arange(3.0), peer=99)
    print(f"built with peer=99 in a group of {world_size}:", describe(far))
    return None


def validation_errors(rank, world_size):
    """Rank 0 makes each mistake that P2POp or batch_isend_irecv checks for.

    Nothing is posted in any case: the errors are raised before any communication.
    Returns {mistake: "ErrorType: message"}.
    """
    sub = dist.new_group(list(range(world_size)))    # every rank must create a group
    if rank != 0:
        return None
    t = torch.ones(3)
    good = dist.P2POp(dist.isend, t, peer=1)
    mistakes = {
        "op=dist.send (not isend/irecv)": lambda: dist.P2POp(dist.send, t, peer=1),
        "both peer and group_peer": lambda: dist.P2POp(dist.isend, t, peer=1, group_peer=1),
        "neither peer nor group_peer": lambda: dist.P2POp(dist.isend, t),
        "a list instead of a tensor": lambda: dist.P2POp(dist.isend, [1.0, 2.0], peer=1),
        "a tuple of ops": lambda: dist.batch_isend_irecv((good,)),
        "an empty list": lambda: dist.batch_isend_irecv([]),
        "ops on two groups": lambda: dist.batch_isend_irecv(
            [good, dist.P2POp(dist.isend, t, peer=1, group=sub)]),
        "a negative tag (checked when posted)": lambda: dist.batch_isend_irecv(
            [dist.P2POp(dist.isend, t, peer=1, tag=-1)]),
    }
    found = {}
    for mistake, attempt in mistakes.items():
        try:
            attempt()
            found[mistake] = "no error"
        except Exception as exc:  # noqa: BLE001 - showing the error is the point
            found[mistake] = _error_text(exc)
        print(f"{mistake:38s} -> {found[mistake]}")
    return found


def unchecked_peer(rank, world_size):
    """Rank 0 posts an isend to rank 99, which does not exist. Run it with a short timeout."""
    if rank == 0:
        dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.ones(3), peer=99)])
    return rank


# -- 2. why batch, and what batch_isend_irecv does on gloo -----------------------------------

def ungrouped_exchange(rank, world_size):
    """Ranks 0 and 1 each isend to the other, then irecv from it, with no batch.

    On gloo isend only posts the send, so both irecvs get posted and the exchange
    completes. (On NCCL the same code can hang: see notebook 02.)
    """
    if rank > 1:
        return None
    peer = 1 - rank
    buf = torch.zeros(3)
    send = dist.isend(torch.full((3,), 10.0 * (rank + 1)), dst=peer)
    recv = dist.irecv(buf, src=peer)
    send.wait()
    recv.wait()
    print(f"isend then irecv, no batch: received {buf.tolist()}")
    return buf.tolist()


def asymmetric_batch(rank, world_size):
    """NVIDIA/nccl#2130's asymmetric batch, on gloo: rank 0 posts [isend to 1, irecv from 1],
    rank 1 posts only [irecv from 0], so rank 0's receive has no matching send.

    Rank 1 prints what it received and returns it; rank 0 waits for every Work of its batch.
    Run it with a short pg_timeout: rank 0's wait on the unmatched receive never returns.
    """
    if rank > 1:
        return None
    if rank == 0:
        works = dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.full((3,), 7.0), 1),
                                        dist.P2POp(dist.irecv, torch.zeros(3), 1)])
        for work in works:
            work.wait()
        return "rank 0's batch completed"
    buf = torch.zeros(3)
    for work in dist.batch_isend_irecv([dist.P2POp(dist.irecv, buf, 0)]):
        work.wait()
    print(f"its one-op batch completed: received {buf.tolist()}")
    return buf.tolist()


def batch_on_gloo(rank, world_size):
    """Ranks 0 and 1 exchange two tensors each way in one batch of four ops."""
    peer = 1 - rank
    ops = [dist.P2POp(dist.isend, torch.full((2,), float(rank)), peer),
           dist.P2POp(dist.irecv, torch.zeros(2), peer),
           dist.P2POp(dist.isend, torch.full((2,), 10.0 + rank), peer),
           dist.P2POp(dist.irecv, torch.zeros(2), peer)]
    works = dist.batch_isend_irecv(ops)
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))   # what the batch checks
    if rank == 0:
        print(f"{len(ops)} ops -> {len(works)} Work objects")
        print(f"backend: {dist.get_backend()}, supports_coalescing: {backend.supports_coalescing}")
    for work in works:
        work.wait()
    return [op.tensor.tolist() for op in ops if op.op is dist.irecv]


# -- 3. ordering and tags ---------------------------------------------------------------------

def order_inside_batch(rank, world_size, recv_first=()):
    """Both ranks exchange one tensor in one batch; ranks in `recv_first` list the irecv first."""
    peer = 1 - rank
    send = dist.P2POp(dist.isend, torch.full((3,), 10.0 * (rank + 1)), peer)
    recv = dist.P2POp(dist.irecv, torch.zeros(3), peer)
    ops = [recv, send] if rank in recv_first else [send, recv]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    print(f"listed {' then '.join(o.op.__name__ for o in ops)}; received {recv.tensor.tolist()}")
    return recv.tensor


def fifo_same_pair(rank, world_size):
    """Rank 0 sends A then B to rank 1 in one batch; rank 1 posts two irecvs.

    Round 1: rank 1 names its buffers (a, b) in the same order. Round 2: it lists them as
    (b, a). Same pair, same direction, same tag: the first receive gets the first send.
    """
    if rank == 0:
        for _ in range(2):
            a, b = torch.full((3,), 1.0), torch.full((3,), 2.0)
            for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, a, 1),
                                                dist.P2POp(dist.isend, b, 1)]):
                work.wait()
        return None
    if rank != 1:
        return None
    for order in (("a", "b"), ("b", "a")):
        bufs = {"a": torch.zeros(3), "b": torch.zeros(3)}
        ops = [dist.P2POp(dist.irecv, bufs[name], 0) for name in order]
        for work in dist.batch_isend_irecv(ops):
            work.wait()
        print(f"irecvs listed as {order}: a = {bufs['a'].tolist()}, b = {bufs['b'].tolist()}")
    return None


def tags_out_of_order(rank, world_size):
    """Rank 0 sends A (tag 1) then B (tag 2); rank 1 receives tag 2 first, then tag 1.

    First with two blocking recvs, then with one batch whose irecvs are listed tag 2 first.
    """
    if rank == 0:
        for _ in range(2):
            ops = [dist.P2POp(dist.isend, torch.full((3,), 1.0), 1, tag=1),
                   dist.P2POp(dist.isend, torch.full((3,), 2.0), 1, tag=2)]
            for work in dist.batch_isend_irecv(ops):
                work.wait()
        return None
    if rank != 1:
        return None
    x, y = torch.zeros(3), torch.zeros(3)
    dist.recv(y, src=0, tag=2)         # the second message sent, received first
    dist.recv(x, src=0, tag=1)
    print(f"blocking recv(tag=2) then recv(tag=1): tag 2 got {y.tolist()}, tag 1 got {x.tolist()}")
    x, y = torch.zeros(3), torch.zeros(3)
    for work in dist.batch_isend_irecv([dist.P2POp(dist.irecv, y, 0, tag=2),
                                        dist.P2POp(dist.irecv, x, 0, tag=1)]):
        work.wait()
    print(f"one batch, irecvs listed tag 2 first:  tag 2 got {y.tolist()}, tag 1 got {x.tolist()}")
    return None


# -- 4. subgroups: peer vs group_peer ----------------------------------------------------------

def subgroup_peers(rank, world_size):
    """4 ranks, two groups: [0, 2] and [1, 3]. Each rank exchanges with its partner in its group.

    Every rank must call new_group for every group, in the same order, even the groups it
    is not in.
    """
    groups = [dist.new_group([0, 2]), dist.new_group([1, 3])]
    group = groups[rank % 2]
    partner = rank ^ 2                                   # 0 <-> 2, 1 <-> 3 (global ranks)
    me_in_group = dist.get_group_rank(group, rank)
    partner_in_group = dist.get_group_rank(group, partner)
    print(f"global rank {rank} = rank {me_in_group} of group {dist.get_process_group_ranks(group)}; "
          f"partner: global {partner} = group rank {partner_in_group}")

    send = dist.P2POp(dist.isend, torch.tensor([float(rank)]), peer=partner, group=group)
    recv = dist.P2POp(dist.irecv, torch.zeros(1), group=group, group_peer=partner_in_group)
    print(f"  P2POp(isend, peer={partner}, group=g)       -> peer={send.peer}, group_peer={send.group_peer}")
    print(f"  P2POp(irecv, group=g, group_peer={partner_in_group}) -> peer={recv.peer}, "
          f"group_peer={recv.group_peer}")

    # The classic mistake: a group rank passed as `peer`.
    try:
        wrong = dist.P2POp(dist.isend, torch.zeros(1), peer=partner_in_group, group=group)
        verdict = ("builds, and happens to be right" if wrong.peer == partner else
                   "builds, and would send to ITSELF" if wrong.peer == rank else
                   f"builds, and would send to global rank {wrong.peer}")
    except ValueError as exc:
        verdict = _error_text(exc)
    print(f"  mistake P2POp(isend, peer={partner_in_group}, group=g): {verdict}")

    for work in dist.batch_isend_irecv([send, recv]):
        work.wait()
    print(f"  received {recv.tensor.item():g} from global rank {partner}")
    return recv.tensor.item()


# -- 5. exercises ----------------------------------------------------------------------------

@exercise
def exchange_with_neighbours(tensor):
    """Send `tensor` to both ring neighbours and receive theirs, with one batch_isend_irecv.

    The left neighbour of rank r is (r - 1) % world_size, the right one (r + 1) % world_size.
    Every rank passes a contiguous tensor of the same shape and dtype (any shape, any
    dtype; gloo sends contiguous memory only).
    Returns (from_left, from_right): new tensors holding the left neighbour's and the right
    neighbour's `tensor`. `tensor` is not modified.
    Edge cases: world size 1 -> both are copies of your own tensor (gloo cannot send to
    your own rank); world size 2 -> the left and right neighbour are the same rank.
    The grader checks the trace: all four operations in ONE batch_isend_irecv call.

    Hint: four P2POps, one batch_isend_irecv, then wait() on every Work it returns.
    """
    raise todo("notebook 02, 'Exercise 1: neighbour exchange'")


@exercise
def ring_shift(tensor, k):
    """Shift the ranks' tensors k positions around the ring (k may be negative or large).

    Every rank sends `tensor` to rank (r + k) % world_size and returns a new tensor holding
    the `tensor` of rank (r - k) % world_size. Same shape and dtype on every rank.
    `tensor` is not modified. When k % world_size == 0 (also world size 1) every rank keeps
    its own tensor: return a copy and communicate nothing (gloo cannot send to yourself).
    The tensor goes straight to its destination: one send to rank + k and one receive from
    rank - k, never relayed through the ranks in between. Any point-to-point calls that
    cannot deadlock will do (batch_isend_irecv, or isend/irecv then wait).

    Hint: Python's % already maps negative k into 0 .. world_size-1.
    """
    raise todo("notebook 02, 'Exercise 2: ring shift by k'")


@exercise
def all_pairs_exchange(chunks):
    """Every rank sends chunks[j] to rank j; chunk lengths differ and are not known in advance.

    `chunks` is a list of world_size 1-D tensors of one dtype (the same dtype on every
    rank), contiguous or not (a view such as x[::2] too: gloo sends contiguous memory only,
    so send a contiguous copy of such a chunk); chunks[j] is for rank j (chunks[rank] stays
    here). Lengths may differ per peer
    and may be 0. Returns a list `received` of world_size new tensors: received[i] is rank
    i's chunks[rank]; received[rank] is a copy of chunks[rank].

    Protocol (the grader checks the tags and batches in the trace): first send each peer the
    length of its chunk as a 1-element int64 tensor with tag SIZE_TAG, and receive theirs,
    all in one batch_isend_irecv that holds lengths only; then send and receive the chunks
    with tag DATA_TAG in a second batch_isend_irecv.

    Hint: a receive buffer can only be allocated once its length is known: one batch for
    all the lengths, wait for all of it, allocate, one batch for all the chunks. With one
    rank there is nobody to exchange with (and batch_isend_irecv([]) raises IndexError).
    """
    raise todo("notebook 02, 'Exercise 3: an all-pairs exchange with sizes and tags'")


def neighbours_run(rank, world_size):
    """Run exchange_with_neighbours on tensor([10 * rank]); returns (from_left, from_right)."""
    from_left, from_right = exchange_with_neighbours(torch.tensor([10.0 * rank]))
    print(f"from left: {from_left.item():g}, from right: {from_right.item():g}")
    return from_left.item(), from_right.item()


def ring_shift_run(rank, world_size, k):
    """Run ring_shift on tensor([rank]); returns the rank whose tensor arrived here."""
    return int(ring_shift(torch.tensor([rank]), k).item())


def ring_shifts_run(rank, world_size, ks):
    """ring_shift_run for each k in `ks`, one after the other; returns one rank per k."""
    return [ring_shift_run(rank, world_size, k) for k in ks]


def all_pairs_run(rank, world_size):
    """Run all_pairs_exchange; rank i sends i + j values, all equal to 10 * i + j, to rank j."""
    chunks = [torch.full((rank + j,), 10.0 * rank + j) for j in range(world_size)]
    received = all_pairs_exchange(chunks)
    print("received:", [t.tolist() for t in received])
    return received


# -- command line / torchrun ----------------------------------------------------------------

def demo(rank, world_size):
    """Lesson 02 demo: one batch_isend_irecv shifts every rank's tensor to the next rank."""
    nxt, prev = (rank + 1) % world_size, (rank - 1) % world_size
    buf = torch.zeros(1)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.tensor([float(rank)]), nxt),
                                    dist.P2POp(dist.irecv, buf, prev)])
    for work in works:
        work.wait()
    return f"{len(works)} Work objects; got {buf.item():g} from rank {prev}"


if __name__ == "__main__":
    cli.main(demo)
