"""Red team F: deadlocks bodies."""
import torch
import torch.distributed as dist

from labs.deadlocks import decode_meta, encode_meta

_DELTA = {}


def _wait(works):
    for w in works:
        w.wait()


def _swap(mine, theirs, peer):
    _wait(dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, peer),
                                  dist.P2POp(dist.irecv, theirs, peer)]))


def batched_delta_encoded(tensor, peer):
    """WRONG: state per (peer, shape, dtype): sends tensor - (what it sent that peer last
    time) and returns (what it returned last time) + what arrived. Not the tensor on the
    wire; floats cancel when magnitudes change between calls."""
    key = (peer, tuple(tensor.shape), tensor.dtype)
    sent, got = _DELTA.get(key, (torch.zeros_like(tensor), torch.zeros_like(tensor)))
    incoming = torch.empty_like(tensor)
    _swap(tensor - sent, incoming, peer)
    result = got + incoming
    _DELTA[key] = (tensor.clone(), result.clone())
    return result


def _meta(tensor, peer):
    theirs = torch.empty(len(encode_meta(tensor)), dtype=torch.int64)
    _swap(encode_meta(tensor), theirs, peer)
    return decode_meta(theirs)


def _refuse(tensor, peer, shape, dtype):
    raise ValueError(f"checked_exchange: rank {dist.get_rank()} has {tuple(tensor.shape)} "
                     f"{tensor.dtype} but peer {peer} has {shape} {dtype}")


def checked_zip_shapes(tensor, peer):
    """WRONG: compares the shapes size by size with zip(), which stops at the shorter one:
    (5,) against (5, 3), or (2, 3) against (2, 3, 4), pass the check and the data exchange
    then overflows or underfills a buffer (gloo abort, or silently wrong data)."""
    shape, dtype = _meta(tensor, peer)
    if dtype != tensor.dtype or not all(a == b for a, b in zip(shape, tensor.shape)):
        _refuse(tensor, peer, shape, dtype)
    out = torch.empty_like(tensor)
    _swap(tensor, out, peer)
    return out


def checked_dtype_by_kind_and_size(tensor, peer):
    """WRONG: dtypes compared by (element size, floating, complex): float16 vs bfloat16
    pass the check and their bytes are silently reinterpreted (lesson 04's
    other_dtype_same_bytes)."""
    shape, dtype = _meta(tensor, peer)
    kind = (dtype.itemsize, dtype.is_floating_point, dtype.is_complex)
    mine = (tensor.dtype.itemsize, tensor.dtype.is_floating_point, tensor.dtype.is_complex)
    if shape != tuple(tensor.shape) or kind != mine:
        _refuse(tensor, peer, shape, dtype)
    out = torch.empty_like(tensor)
    _swap(tensor, out, peer)
    return out


def exchange_numpy_scratch(tensor, peer):
    """WRONG: receives into the caller's tensor through its numpy view (no version bump),
    sending a copy; copies the result out and restores the input: the caller's tensor is
    overwritten for the duration of the call."""
    saved = tensor.clone()
    arr = tensor.numpy()
    scratch = torch.from_numpy(arr)
    _swap(saved, scratch, peer)
    result = scratch.clone()
    arr[...] = saved.numpy()
    return result
