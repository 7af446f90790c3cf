"""Round 11 (red team): learner bodies the graders judged wrongly, now in the catalogue
(tests/harness/test_graders.py), except ring_job_validates_first (arguable: it refuses a
negative numel before joining, which the contract's "raise inside the job" does not allow).

(Lesson `jobs`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red11_a.py.)
"""
import datetime
import sys

import torch
import torch.distributed as dist


# -- lesson 11: ring_job ---------------------------------------------------------------------

def _join(timeout_s):
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=timeout_s))


def _report(rank, tensor):
    from labs.harness.commands.cli import format_result
    sys.stdout.write(format_result(rank, tensor) + "\n")
    sys.stdout.flush()


def ring_job_star(numel=6, timeout_s=30.0):
    """WRONG (not a ring: rank 0 receives every tensor, sums, and sends the total back, point
    to point, with real data): the grader only asks for some point-to-point op and no
    collective, never the ring's partners or chunked messages."""
    _join(timeout_s)
    try:
        rank, ws = dist.get_rank(), dist.get_world_size()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        if rank == 0:
            for peer in range(1, ws):
                buf = torch.empty_like(tensor)
                dist.recv(buf, peer)
                tensor += buf
            for peer in range(1, ws):
                dist.send(tensor, peer)
        else:
            dist.send(tensor, 0)
            dist.recv(tensor, 0)
        _report(rank, tensor)
        return tensor
    finally:
        dist.destroy_process_group()


def ring_job_torch_chunk(numel=6, timeout_s=30.0):
    """WRONG (a hand-written ring cut with tensor.chunk(ws): chunk returns FEWER than ws pieces
    when numel < ws (numel 0, 1, 2 on 3 ranks; or 4 elements on 3 ranks gives 2+2), so the
    ring indexes past the end or loses elements): correct only for the grader's numel=7 on 3
    ranks; the contract says any numel >= 0."""
    _join(timeout_s)
    try:
        rank, ws = dist.get_rank(), dist.get_world_size()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        if ws > 1:
            chunks = list(tensor.chunk(ws))
            nxt, prv = (rank + 1) % ws, (rank - 1) % ws
            for step in range(ws - 1):
                s, r = (rank - step) % ws, (rank - step - 1) % ws
                buf = torch.empty_like(chunks[r])
                for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, chunks[s], nxt),
                                                 dist.P2POp(dist.irecv, buf, prv)]):
                    w.wait()
                chunks[r] += buf
            for step in range(ws - 1):
                s, r = (rank + 1 - step) % ws, (rank - step) % ws
                buf = torch.empty_like(chunks[r])
                for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, chunks[s], nxt),
                                                 dist.P2POp(dist.irecv, buf, prv)]):
                    w.wait()
                chunks[r].copy_(buf)
        _report(rank, tensor)
        return tensor
    finally:
        dist.destroy_process_group()


def ring_job_barrier_before_leaving(numel=6, timeout_s=30.0):
    """RIGHT (the ring from lesson 05, then the common torchrun idiom: dist.barrier() so that
    no rank tears the group down while a peer still finishes, then destroy in `finally`):
    a barrier moves no data; the course itself says a barrier is ignored."""
    from solutions.ring import ring_all_reduce
    _join(timeout_s)
    try:
        rank = dist.get_rank()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        ring_all_reduce(tensor)
        _report(rank, tensor)
        dist.barrier()
        return tensor
    finally:
        dist.destroy_process_group()


def ring_job_widened(numel=6, timeout_s=30.0):
    """WRONG (the ring runs on a float64 copy "for accuracy", copied back: every message is
    float64, twice the bytes; lesson 05's rule is the tensor's own dtype on the wire, never
    widened): the job grader checks the values only, never the messages' dtype."""
    from solutions.ring import ring_all_reduce
    _join(timeout_s)
    try:
        rank = dist.get_rank()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        wide = tensor.double()
        ring_all_reduce(wide)
        tensor.copy_(wide)
        _report(rank, tensor)
        return tensor
    finally:
        dist.destroy_process_group()


def ring_job_device_backend(numel=6, timeout_s=30.0):
    """RIGHT (joins with the device-qualified backend string "cpu:gloo", which torch documents
    for init_process_group: gloo for CPU tensors; the rest as the reference)."""
    from solutions.ring import ring_all_reduce
    dist.init_process_group("cpu:gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=timeout_s))
    try:
        rank = dist.get_rank()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        ring_all_reduce(tensor)
        _report(rank, tensor)
        return tensor
    finally:
        dist.destroy_process_group()


def ring_job_validates_first(numel=6, timeout_s=30.0):
    """RIGHT (arguably: checks its argument before joining, the usual fail-fast style: a
    negative numel raises ValueError on every rank, so torchrun reports the failed rank and
    no group is left behind; otherwise the reference's job)."""
    from solutions.ring import ring_all_reduce
    if numel < 0:
        raise ValueError(f"numel must be >= 0, got {numel}")
    _join(timeout_s)
    try:
        rank = dist.get_rank()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        ring_all_reduce(tensor)
        _report(rank, tensor)
        return tensor
    finally:
        dist.destroy_process_group()


def ring_job_unwaited(numel=6, timeout_s=30.0):
    """WRONG (found in our last review): the pass-along ring whose isends are never waited;
    the job grader checked partners, dtype and counts, never the waits."""
    _join(timeout_s)
    try:
        rank, ws = dist.get_rank(), dist.get_world_size()
        t = torch.arange(numel, dtype=torch.float32) + 10 * rank
        held, total, kept = t.clone(), t.clone(), []
        for _ in range(ws - 1):
            kept.append(dist.isend(held.clone(), (rank + 1) % ws))
            got = torch.empty_like(t)
            dist.recv(got, (rank - 1) % ws)
            total += got
            held = got
        _report(rank, total)
        return total
    finally:
        dist.destroy_process_group()
