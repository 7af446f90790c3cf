"""Red team H: algorithms bodies."""
import torch
import torch.distributed as dist


def _run(ops):
    for w in dist.batch_isend_irecv(ops):
        w.wait()


def doubling_negated_wire(tensor):
    """WRONG? (stand-in on the wire): recursive doubling (own fold) where every core exchange
    sends the NEGATED running sum and the receiver subtracts: a - (-b) == a + b bit for bit,
    so values, sizes, partners and same-bits all match; the messages hold -sums, not the
    sums. compare="exact" has no contents comparison for this exercise."""
    rank, p = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    q = 1 << (p.bit_length() - 1)
    if rank >= q:
        _run([dist.P2POp(dist.isend, flat, rank - q)])
        _run([dist.P2POp(dist.irecv, flat, rank - q)])
        return tensor
    if rank + q < p:
        extra = torch.empty_like(flat)
        _run([dist.P2POp(dist.irecv, extra, rank + q)])
        flat.add_(extra)
    mask = 1
    while mask < q:
        out, incoming = -flat, torch.empty_like(flat)
        _run([dist.P2POp(dist.isend, out, rank ^ mask), dist.P2POp(dist.irecv, incoming, rank ^ mask)])
        flat.sub_(incoming)
        mask <<= 1
    if rank + q < p:
        _run([dist.P2POp(dist.isend, flat, rank + q)])
    return tensor


def tree_any_source_recv(tensor, src):
    """WRONG? (racy) / RIGHT? : the binomial tree with the parent's message taken by
    dist.recv(tensor) from ANY source (each rank has one parent, "so it can only come from
    there"). Across successive broadcasts with other roots a rank's next parent may send
    before this broadcast's parent does: the any-source receive can take the wrong one."""
    rank, p = dist.get_rank(), dist.get_world_size()
    if tensor.numel() == 0:          # gloo's any-source receive refuses empty buffers
        return tensor
    v = (rank - src) % p
    if v:
        dist.recv(tensor)
    m = 1
    while m <= v:
        m <<= 1
    while v + m < p:
        dist.send(tensor, (v + m + src) % p)
        m <<= 1
    return tensor


def tree_scratch_then_copy(tensor, src):
    """RIGHT: the binomial tree (hint's), non-roots receive into a scratch tensor of their own
    (irecv + wait), copy it into `tensor`, then serve their children with isends waited
    together at the end."""
    rank, p = dist.get_rank(), dist.get_world_size()
    v = (rank - src) % p
    if v:
        parent = (v - (1 << (v.bit_length() - 1)) + src) % p
        buf = torch.empty_like(tensor)
        dist.irecv(buf, parent).wait()
        tensor.copy_(buf)
    m = 1
    while m <= v:
        m <<= 1
    works = []
    while v + m < p:
        works.append(dist.isend(tensor, (v + m + src) % p))
        m <<= 1
    for w in works:
        w.wait()
    return tensor
