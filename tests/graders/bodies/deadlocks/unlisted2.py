"""Wrong bodies of the second round: the kinds unlisted.py did not cover. Each is a class of
mistake, caught in general (from the record, the reference and the harness's properties),
not because this file lists it.

  1. communication where the record did not look (a thread of the body's own);
  2. a method that never has to happen (comparisons that bound messages from above only);
  3. the method on some cases only (large tensors, world sizes beyond 4);
  4. waiting (requests handed back in part, is_completed polling);
  5. buffers that live on for some cases only;
  6. values that do not prove communication (a clock started after the send);
  7. a contract that raises: data moved first, or a collective instead of the refusal.

(Lesson `deadlocks`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/unlisted2.py.)
"""

import torch
import torch.distributed as dist

from tests.graders.bodies import copies
reference_exchange = copies.deadlocks.exchange_batched


# 7. a contract that raises ------------------------------------------------------------------

def checked_shape_after_data(tensor, peer):
    """Compares numel and dtype first, but the shape only after the data has moved."""
    from labs.deadlocks import decode_meta, encode_meta
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                        dist.P2POp(dist.irecv, theirs, peer)]):
        work.wait()
    shape, dtype = decode_meta(theirs)
    numel = torch.Size(shape).numel()
    if numel != tensor.numel() or dtype != tensor.dtype:
        raise ValueError(f"rank {dist.get_rank()} has {tuple(tensor.shape)} {tensor.dtype}, "
                         f"peer {peer} has {shape} {dtype}")
    received = reference_exchange(tensor, peer)
    if shape != tuple(tensor.shape):
        raise ValueError(f"rank {dist.get_rank()} has {tuple(tensor.shape)} {tensor.dtype}, "
                         f"peer {peer} has {shape} {dtype}")
    return received
