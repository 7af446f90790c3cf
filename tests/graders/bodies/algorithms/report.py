"""Lesson 10, issue 52 item 4: bodies whose failing cases share one cause, for the report
that names it (labs/harness/grading/evidence.py)."""
import torch
import torch.distributed as dist


def doubling_adds_in_float64(tensor):
    """Recursive doubling with each partner's tensor added in float64, then cast back: right
    for the float dtypes, wrong for int64 beyond 2**53 (float64 keeps 53 bits), so only
    int64 fails, whatever the size."""
    from labs.algorithms import fold_in, fold_out, power_of_two_below
    rank, q = dist.get_rank(), power_of_two_below(dist.get_world_size())
    flat = tensor.reshape(-1).clone()
    if fold_in(flat):
        mask = 1
        while mask < q:
            incoming = torch.empty_like(flat)
            for work in dist.batch_isend_irecv([
                    dist.P2POp(dist.isend, flat.clone(), rank ^ mask),
                    dist.P2POp(dist.irecv, incoming, rank ^ mask)]):
                work.wait()
            flat.copy_(flat.double() + incoming.double())
            mask <<= 1
    fold_out(flat)
    tensor.copy_(flat.view_as(tensor))
    return tensor
