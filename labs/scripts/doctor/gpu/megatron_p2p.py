"""A pipeline's neighbour exchange as Megatron-LM writes it (megatron/core/pipeline_parallel/
p2p_communication.py): P2POp lists of send_prev/recv_prev/send_next/recv_next in one
batch_isend_irecv, every request waited, then torch.cuda.synchronize().

    torchrun --nproc-per-node 4 megatron_p2p.py                       # on GPUs, NCCL
    python -m labs.doctor --nproc-per-node 4 megatron_p2p.py          # here, unmodified

Each rank is one stage (a Linear layer) of a pipeline; microbatches go forward through every
stage, then their gradients come back (all forward, then all backward), and every stage's
weight gradient is checked against the whole model run on one rank.
Run with `--bug` for the twin: send_backward hands the gradient to the NEXT stage.
"""
import os
import sys

import torch
import torch.distributed as dist

BUG = "--bug" in sys.argv
HIDDEN, MICRO, BATCH = 8, 3, 2


def _batched_p2p_ops(*, tensor_send_prev, tensor_recv_prev, tensor_send_next,
                     tensor_recv_next, prev_pipeline_rank, next_pipeline_rank):
    ops = []
    if tensor_send_prev is not None:
        ops.append(dist.P2POp(dist.isend, tensor_send_prev, prev_pipeline_rank))
    if tensor_recv_prev is not None:
        ops.append(dist.P2POp(dist.irecv, tensor_recv_prev, prev_pipeline_rank))
    if tensor_send_next is not None:
        ops.append(dist.P2POp(dist.isend, tensor_send_next, next_pipeline_rank))
    if tensor_recv_next is not None:
        ops.append(dist.P2POp(dist.irecv, tensor_recv_next, next_pipeline_rank))
    reqs = dist.batch_isend_irecv(ops) if ops else []
    return reqs


def _communicate(*, tensor_send_next, tensor_send_prev, recv_prev, recv_next):
    rank, n = dist.get_rank(), dist.get_world_size()
    shape = (BATCH, HIDDEN)
    tensor_recv_prev = tensor_recv_next = None
    if recv_prev:
        tensor_recv_prev = torch.empty(shape, requires_grad=True,
                                       device=torch.cuda.current_device(), dtype=torch.float32)
    if recv_next:
        tensor_recv_next = torch.empty(shape, requires_grad=True,
                                       device=torch.cuda.current_device(), dtype=torch.float32)
    reqs = _batched_p2p_ops(tensor_send_prev=tensor_send_prev, tensor_recv_prev=tensor_recv_prev,
                            tensor_send_next=tensor_send_next, tensor_recv_next=tensor_recv_next,
                            prev_pipeline_rank=(rank - 1) % n, next_pipeline_rank=(rank + 1) % n)
    for req in reqs:
        req.wait()
    # To protect against race condition when using batch_isend_irecv() (Megatron's comment)
    torch.cuda.synchronize()
    return tensor_recv_prev, tensor_recv_next


def recv_forward():
    return _communicate(tensor_send_next=None, tensor_send_prev=None, recv_prev=True,
                        recv_next=False)[0]


def send_forward(output_tensor):
    _communicate(tensor_send_next=output_tensor, tensor_send_prev=None, recv_prev=False,
                 recv_next=False)


def recv_backward():
    return _communicate(tensor_send_next=None, tensor_send_prev=None, recv_prev=False,
                        recv_next=True)[1]


def send_backward(input_tensor_grad):
    if BUG:       # the gradient goes the wrong way: to the next stage, not the previous one
        _communicate(tensor_send_next=input_tensor_grad, tensor_send_prev=None,
                     recv_prev=False, recv_next=False)
        return
    _communicate(tensor_send_next=None, tensor_send_prev=input_tensor_grad, recv_prev=False,
                 recv_next=False)


def main():
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    rank, n = dist.get_rank(), dist.get_world_size()
    first, last = rank == 0, rank == n - 1
    torch.manual_seed(0)
    stages = [torch.nn.Linear(HIDDEN, HIDDEN) for _ in range(n)]   # the whole model, on every
    data = [torch.randn(BATCH, HIDDEN) for _ in range(MICRO)]       # rank: the reference
    stage = torch.nn.Linear(HIDDEN, HIDDEN).cuda()
    stage.load_state_dict(stages[rank].state_dict())
    # Megatron's initialization makes collective calls before the first batch: NCCL's first
    # batch_isend_irecv must then not be joined by every rank of the group
    dist.barrier()

    inputs, outputs = [], []
    for micro in range(MICRO):
        x = data[micro].cuda().requires_grad_() if first else recv_forward()
        y = torch.tanh(stage(x))
        if not last:
            send_forward(y.detach())
        inputs.append(x)
        outputs.append(y)
    for micro in range(MICRO):
        grad = torch.ones_like(outputs[micro]) if last else recv_backward()
        outputs[micro].backward(grad)
        if not first:
            send_backward(inputs[micro].grad)
    torch.cuda.synchronize()

    for x in data:                                   # the reference: the whole model here
        h = x
        for s in stages:
            h = torch.tanh(s(h))
        h.sum().backward()
    ok = torch.allclose(stage.weight.grad.cpu(), stages[rank].weight.grad, atol=1e-5)
    print(f"stage {rank}: weight gradient {'matches' if ok else 'DIFFERS from'} the whole model's")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
