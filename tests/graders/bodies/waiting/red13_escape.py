"""Round 13 (ours): the weight's values taken out of the grader's sight by other doors than
.item(), then the product computed after every wait (no overlap), with a one-row product
in flight as the only span the grader could see."""
import copy
import io
import pickle

import torch
import torch.distributed as dist


def _late(block, weight, recv_buf, plain_of):
    rank, ws = dist.get_rank(), dist.get_world_size()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, (rank + 1) % ws),
                                    dist.P2POp(dist.irecv, recv_buf, (rank - 1) % ws)])
    _ = block[:1] @ weight                           # a warm-up row, in flight
    for w in works:
        w.wait()
    return block @ plain_of(weight)


# WRONG: the weight through pickle.
def via_pickle(block, weight, recv_buf):
    return _late(block, weight, recv_buf, lambda w: pickle.loads(pickle.dumps(w)))


# WRONG: the weight through torch.save into memory.
def via_torch_save(block, weight, recv_buf):
    def plain(w):
        f = io.BytesIO()
        torch.save(w, f)
        f.seek(0)
        return torch.load(f)
    return _late(block, weight, recv_buf, plain)


# WRONG: the weight's .data.
def via_data(block, weight, recv_buf):
    return _late(block, weight, recv_buf, lambda w: w.data)


# WRONG: a deep copy.
def via_deepcopy(block, weight, recv_buf):
    return _late(block, weight, recv_buf, copy.deepcopy)


# WRONG: float() of each element.
def via_float(block, weight, recv_buf):
    return _late(block, weight, recv_buf, lambda w: torch.tensor(
        [[float(x) for x in row] for row in w], dtype=w.dtype))


# WRONG: the weight's repr parsed back.
def via_repr(block, weight, recv_buf):
    def plain(w):
        torch.set_printoptions(precision=17, profile="full")
        try:
            text = repr(w.double())
        finally:
            torch.set_printoptions(profile="default")
        body = text[text.index("(") + 1:text.rindex("]") + 1]
        return torch.tensor(eval(body), dtype=w.dtype)
    return _late(block, weight, recv_buf, plain)


# WRONG: the bytes through a bytearray of the weight's memory (numpy-free).
def via_bytes_of_view(block, weight, recv_buf):
    def plain(w):
        raw = w.contiguous().view(torch.uint8)
        return torch.tensor(bytes(bytearray(raw)),
                            dtype=torch.uint8).view(w.dtype).reshape(w.shape)
    return _late(block, weight, recv_buf, plain)


# WRONG: torch.Tensor._make_subclass / a new Parameter around the weight.
def via_parameter(block, weight, recv_buf):
    return _late(block, weight, recv_buf,
                 lambda w: torch.nn.Parameter(w.detach(), requires_grad=False) * 1)
