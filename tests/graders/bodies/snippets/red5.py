"""Red team F: snippets bodies."""
import torch
import torch.distributed as dist


def fixed_average_params_as_scratch(model):
    """WRONG: to save memory, the first peer's gradients are received INTO THE PARAMETERS'
    memory (p.data), the parameters being saved and put back at the end: the parameters
    are overwritten for the duration of the call (the contract: 'the parameters themselves
    are not touched')."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    peers = [p for p in range(ws) if p != rank]
    if not peers:
        return None
    saved = [p.detach().clone() for p in params]
    bufs = {peer: [p.data if i == 0 else torch.empty_like(p.grad) for p in params]
            for i, peer in enumerate(peers)}
    ops = []
    for peer in peers:
        for p, buf in zip(params, bufs[peer]):
            ops.append(dist.P2POp(dist.isend, p.grad, peer))
            ops.append(dist.P2POp(dist.irecv, buf, peer))
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    for k, p in enumerate(params):
        total = p.grad.clone()
        for peer in peers:
            total += bufs[peer][k]
        p.grad = total / ws
        p.data.copy_(saved[k])
    return None


def fixed_average_predivided_in_place(model):
    """RIGHT: DDP's own order: each gradient divided by W in place BEFORE posting, then
    sent; the average is own/W + the received (already divided) gradients."""
    rank, ws = dist.get_rank(), dist.get_world_size()
    params = list(model.parameters())
    for p in params:
        p.grad.div_(ws)
    peers = [p for p in range(ws) if p != rank]
    got = {peer: [torch.empty_like(p.grad) for p in params] for peer in peers}
    ops = [dist.P2POp(op, t, peer) for peer in peers
           for p, buf in zip(params, got[peer])
           for op, t in ((dist.isend, p.grad), (dist.irecv, buf))]
    for w in dist.batch_isend_irecv(ops) if ops else []:
        w.wait()
    for k, p in enumerate(params):
        total = p.grad.clone()
        for peer in peers:
            total += got[peer][k]
        p.grad = total
    return None
