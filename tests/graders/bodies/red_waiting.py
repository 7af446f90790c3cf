"""Probe bodies for lesson 03 (safe_ring_shift, overlapped_step)."""
import threading

import torch
import torch.distributed as dist


def _ring():
    r, n = dist.get_rank(), dist.get_world_size()
    return (r + 1) % n, (r - 1) % n


# ---------------------------------------------------------------- WRONG
def step_float32_product(block, weight, recv_buf):
    """WRONG: the product computed in float32 and cast back (float64 blocks lose precision)."""
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    product = (block.float() @ weight.float()).to(block.dtype)
    for w in works:
        w.wait()
    return product


def step_unwatched_then_dummy(block, weight, recv_buf):
    """WRONG: the real product before posting, through numpy (the trace cannot see it);
    a token product while the data travels."""
    real = torch.from_numpy(block.numpy() @ weight.as_subclass(torch.Tensor).numpy())
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    _ = block[:1] @ weight
    for w in works:
        w.wait()
    return real


def step_product_after_wait_plain(block, weight, recv_buf):
    """WRONG: waits first, then the product, with the weight stripped to a plain tensor and
    a token product in flight."""
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    torch.mm(block[:1, :], weight)                 # "overlap"
    for w in works:
        w.wait()
    return torch.mm(block, weight.as_subclass(torch.Tensor))


def step_reads_recv_in_flight(block, weight, recv_buf):
    """WRONG: computes with the RECEIVED block (not `block`) while it is in flight... the
    learner misread which block to multiply? No: multiplies `block`, but also 'prefetches'
    recv_buf.clone() before the wait and copies it back after (a race)."""
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    product = block @ weight
    early = recv_buf.clone()
    for w in works:
        w.wait()
    recv_buf.copy_(early)
    return product


def shift_wait_send_read_then_wait_recv(tensor):
    """WRONG (a race): waits for the send, copies the receive buffer, then waits for the
    receive."""
    nxt, prev = _ring()
    buf = torch.empty_like(tensor)
    s, r = dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                   dist.P2POp(dist.irecv, buf, prev)])
    s.wait()
    out = buf.clone()
    r.wait()
    return out


def shift_float_arith_int(tensor):
    """WRONG: the received tensor goes through float32 on the way out (int64 values above
    2**24 and float64 precision are lost)."""
    nxt, prev = _ring()
    buf = torch.empty_like(tensor)
    for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, nxt),
                                     dist.P2POp(dist.irecv, buf, prev)]):
        w.wait()
    return buf.float().to(tensor.dtype)


# ---------------------------------------------------------------- RIGHT
def shift_futures(tensor):
    """RIGHT: isend/irecv, waited through their futures (torch.futures.wait_all)."""
    nxt, prev = _ring()
    buf = torch.empty_like(tensor)
    works = [dist.isend(tensor, nxt), dist.irecv(buf, prev)]
    torch.futures.wait_all([w.get_future() for w in works])
    return buf


def shift_send_in_thread(tensor):
    """RIGHT: the blocking send in a helper thread, the blocking receive here."""
    nxt, prev = _ring()
    buf = torch.empty_like(tensor)
    t = threading.Thread(target=dist.send, args=(tensor, nxt))
    t.start()
    dist.recv(buf, prev)
    t.join()
    return buf


def step_temp_then_copy(block, weight, recv_buf):
    """RIGHT: receive into a temporary, compute while it flies (row chunks), wait, then
    copy into recv_buf."""
    nxt, prev = _ring()
    tmp = torch.empty_like(recv_buf)
    works = dist.batch_isend_irecv([dist.P2POp(dist.irecv, tmp, prev),
                                    dist.P2POp(dist.isend, block, nxt)])
    product = torch.cat([rows @ weight for rows in block.split(16)])
    for w in reversed(works):
        w.wait()
    recv_buf.copy_(tmp)
    return product


def step_linear_isend(block, weight, recv_buf):
    """RIGHT: isend/irecv, the product as F.linear(block, weight.T)."""
    nxt, prev = _ring()
    works = [dist.irecv(recv_buf, src=prev), dist.isend(block, dst=nxt)]
    product = torch.nn.functional.linear(block, weight.T)
    for w in works:
        w.wait()
    return product.as_subclass(torch.Tensor)


def step_type_as_first(block, weight, recv_buf):
    """RIGHT: aligns the weight's dtype with the block first (a common idiom, a no-op
    here), then posts, computes in flight, waits."""
    weight = weight.type_as(block)
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    product = block @ weight
    for w in works:
        w.wait()
    return product


def step_shape_check_first(block, weight, recv_buf):
    """RIGHT: validates its inputs first (torch.result_type of block and weight must
    match, shapes must chain), then the lesson's overlap."""
    if torch.result_type(block, weight) != block.dtype or block.shape[1] != weight.shape[0]:
        raise ValueError("block and weight do not chain")
    nxt, prev = _ring()
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, block, nxt),
                                    dist.P2POp(dist.irecv, recv_buf, prev)])
    product = block @ weight
    for w in works:
        w.wait()
    return product
