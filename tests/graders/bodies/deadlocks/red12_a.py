"""Round 12 (red team, a): learner bodies for lessons 01-04 and 08 (p2p, batching, waiting,
deadlocks, snippets), of kinds the earlier rounds did not try: the weight copied out of the
grader's sight by a tensor constructor, gradients that are zero on one rank, metadata
compared without its number of dimensions, and correct bodies in other styles (a helper
thread, scratch buffers, a float64 accumulator, rotated peer orders ...).

(Lesson `deadlocks`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red12_a.py.)
"""

import torch
import torch.distributed as dist


def _wait(works):
    for w in works:
        w.wait()


# -- lesson 04: checked_exchange
# --------------------------------------------------------------------

def _meta_swap(tensor, peer):
    from labs.deadlocks import encode_meta
    mine = encode_meta(tensor)
    theirs = torch.empty_like(mine)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                  dist.P2POp(dist.irecv, theirs, peer)]))
    return mine, theirs


def _data_swap(tensor, peer):
    received = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, received, peer)]))
    return received


# WRONG: compares the metadata without its first slot (the number of dimensions), "the
# sizes and the dtype are what matter": the zero padding of the unused sizes then hides a
# trailing dimension of size 0, so (2, 3) and (2, 3, 0) pass as the same shape and the data
# exchange sends 6 elements into a receive of 0. The grader's mismatches have no size 0.
def checked_meta_without_ndim(tensor, peer):
    from labs.deadlocks import decode_meta
    mine, theirs = _meta_swap(tensor, peer)
    if not torch.equal(mine[1:], theirs[1:]):
        shape, dtype = decode_meta(theirs)
        raise ValueError(f"checked_exchange: rank {dist.get_rank()} has "
                         f"{tuple(tensor.shape)} {tensor.dtype} but peer {peer} has "
                         f"{shape} {dtype}")
    return _data_swap(tensor, peer)


# -- more of lesson 04: exchange_batched -----------------------------------------------------------

# WRONG: "sanitises" what arrived with torch.nan_to_num: a peer's NaN / inf become 0 / the
# largest finite value (silently wrong data); the grader's tensors never hold NaN or inf.
def batched_nan_to_num(tensor, peer):
    received = torch.empty_like(tensor)
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                  dist.P2POp(dist.irecv, received, peer)]))
    return torch.nan_to_num(received) if received.is_floating_point() else received


# WRONG: "a leading dimension of 1 is the same tensor": drops a leading size-1 dimension
# before comparing, so (1, 6) and (6,) pass as equal and rank 0 returns a (1, 6) tensor
# holding a (6,) tensor's data, no ValueError. The grader's mismatches never differ by a
# leading 1 ("one more dimension" is a trailing one).
def checked_squeezes_leading_ones(tensor, peer):
    from labs.deadlocks import decode_meta
    mine, theirs = _meta_swap(tensor, peer)
    shape, dtype = decode_meta(theirs)

    def core(s):
        s = tuple(s)
        return s[1:] if len(s) > 1 and s[0] == 1 else s
    if core(shape) != core(tensor.shape) or dtype != tensor.dtype:
        raise ValueError(f"checked_exchange: rank {dist.get_rank()} has "
                         f"{tuple(tensor.shape)} {tensor.dtype} but peer {peer} has "
                         f"{shape} {dtype}")
    return _data_swap(tensor, peer)
