"""Lesson 09: why production systems batch their point-to-point ops.

Two patterns, each on real workers and checked against the unsplit computation:

  * Pipeline parallelism with the 1F1B schedule: a small MLP split into one stage per
    rank. In the steady state neighbouring stages send to each other at the same moment
    (activations forward, gradients backward). Blocking send-then-recv deadlocks on gloo;
    a batch (`send_forward_recv_backward` / `send_backward_recv_forward`, as in Megatron-LM
    and picotron) does not, nor do non-blocking ops, ungrouped (gloo only) or ordered by
    rank parity as Megatron-LM's path without batching does (what NCCL needs).
    `pipeline_step` runs one training step.
  * Ring attention (context parallelism): every rank keeps its query block while key and
    value blocks travel around the ring, one batch per step, received into fresh buffers
    while the current block is being used (double buffering). `ring_attention` merges the
    partial results with log-sum-exp and equals full attention.

Exercises: `send_forward_recv_backward`, `send_backward_recv_forward` (notebook 09,
Exercise 1) and `rotate_kv` (Exercise 2). The notebook's trace checks (do two
neighbours' ungrouped ops pair up in order? did the rotation overlap the compute?) and
its ring-attention figure: labs.views.patterns.
"""
from collections import deque

import torch
import torch.distributed as dist
import torch.nn as nn

from labs.harness.commands import cli
from labs.harness.ranks.exercises import exercise, todo
from labs.harness.ranks.tracing import span

# ----------------------------------------------------------------------------------------
# Pipeline parallelism
# ----------------------------------------------------------------------------------------

IN_FEATURES, HIDDEN, OUT_FEATURES = 8, 16, 4
BATCH = 16


def make_stages(n_stages):
    """The same MLP on every process (seed 0), as a list of `n_stages` stages. Every stage
    boundary is HIDDEN wide, so every activation sent between stages has the same shape."""
    torch.manual_seed(0)
    dims = [IN_FEATURES] + [HIDDEN] * (n_stages - 1) + [OUT_FEATURES]
    stages = []
    for s in range(n_stages):
        layer = nn.Linear(dims[s], dims[s + 1])
        stages.append(nn.Sequential(layer, nn.Tanh()) if s < n_stages - 1 else layer)
    return stages


def make_batch():
    g = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, IN_FEATURES, generator=g), torch.randn(BATCH, OUT_FEATURES, generator=g)


def reference_step(n_stages):
    """The unsplit model on one process: (loss, [[grad of each param] per stage])."""
    stages = make_stages(n_stages)
    x, y = make_batch()
    loss = nn.functional.mse_loss(nn.Sequential(*stages)(x), y)
    loss.backward()
    return loss.item(), [[p.grad.clone() for p in stage.parameters()] for stage in stages]


@exercise
def send_forward_recv_backward(output, next_rank):
    """Pipeline steady state, on stage s: send this micro-batch's `output` activation to
    stage s + 1 (`next_rank`) and receive from it the gradient of an earlier micro-batch's
    output, which has the same shape and dtype. Stage s + 1 calls
    `send_backward_recv_forward` with us at the same moment.

    Returns the received gradient in a new tensor. Must not deadlock when the neighbour
    sends at the same time; `output` must not be modified. Any shape and dtype, contiguous
    or not. The send and the receive are posted in ONE `dist.batch_isend_irecv` call.

    Hint: one `dist.batch_isend_irecv` with a `P2POp(dist.isend, ...)` of
    `output.contiguous()` and a `P2POp(dist.irecv, ...)` into
    `torch.empty(output.shape, dtype=output.dtype)` (contiguous, which `empty_like` of a
    transposed view is not), then wait for every request.
    """
    raise todo("notebook 09, 'Exercise 1: the 1F1B neighbour exchange'")


@exercise
def send_backward_recv_forward(input_grad, prev_rank):
    """Pipeline steady state, on stage s: send the gradient w.r.t. this stage's input
    (`input_grad`) to stage s - 1 (`prev_rank`) and receive from it the next micro-batch's
    input activation, which has the same shape and dtype. Stage s - 1 calls
    `send_forward_recv_backward` with us at the same moment.

    Returns the received activation in a new tensor (no autograd history). Must not
    deadlock when the neighbour sends at the same time; `input_grad` must not be modified.

    Hint: the mirror image of `send_forward_recv_backward`.
    """
    raise todo("notebook 09, 'Exercise 1: the 1F1B neighbour exchange'")


def blocking_send_forward_recv_backward(output, next_rank):
    """The naive version: blocking send, then blocking recv."""
    dist.send(output, dst=next_rank)
    grad = torch.empty_like(output)
    dist.recv(grad, src=next_rank)
    return grad


def blocking_send_backward_recv_forward(input_grad, prev_rank):
    dist.send(input_grad, dst=prev_rank)
    activation = torch.empty_like(input_grad)
    dist.recv(activation, src=prev_rank)
    return activation


def parity_ordered_p2p(send_prev=None, recv_prev=None, send_next=None, recv_next=None, *,
                       prev_rank=None, next_rank=None):
    """Megatron-LM's exchange without batching (`_p2p_ops` in
    megatron/core/pipeline_parallel/p2p_communication.py), rebuilt: non-blocking isend and
    irecv, posted in an order that depends on the rank's parity, then a wait for each.

        even rank: send to next, receive from previous, send to previous, receive from next
        odd rank:  receive from previous, send to next, receive from next, send to previous

    (only the ops whose tensor is given). Between two neighbours, the k-th op one posts
    with the other meets the k-th op the other posts with it as a send and a receive, which
    is what a backend that runs the ops between two ranks in order needs (NCCL)."""
    if dist.get_rank() % 2 == 0:
        plan = [(dist.isend, send_next, next_rank), (dist.irecv, recv_prev, prev_rank),
                (dist.isend, send_prev, prev_rank), (dist.irecv, recv_next, next_rank)]
    else:
        plan = [(dist.irecv, recv_prev, prev_rank), (dist.isend, send_next, next_rank),
                (dist.irecv, recv_next, next_rank), (dist.isend, send_prev, prev_rank)]
    works = [post(tensor, peer) for post, tensor, peer in plan if tensor is not None]
    for work in works:
        work.wait()


def parity_send_forward_recv_backward(output, next_rank):
    """The exchange with the next stage, through `parity_ordered_p2p`."""
    grad = torch.empty_like(output)
    parity_ordered_p2p(send_next=output, recv_next=grad, next_rank=next_rank)
    return grad


def parity_send_backward_recv_forward(input_grad, prev_rank):
    """The exchange with the previous stage, through `parity_ordered_p2p`."""
    activation = torch.empty_like(input_grad)
    parity_ordered_p2p(send_prev=input_grad, recv_prev=activation, prev_rank=prev_rank)
    return activation


def ungrouped_send_forward_recv_backward(output, next_rank):
    """Non-blocking, no batch, no ordering: isend then irecv, and the same on both sides."""
    grad = torch.empty_like(output)
    for work in [dist.isend(output, next_rank), dist.irecv(grad, next_rank)]:
        work.wait()
    return grad


def ungrouped_send_backward_recv_forward(input_grad, prev_rank):
    activation = torch.empty_like(input_grad)
    for work in [dist.isend(input_grad, prev_rank), dist.irecv(activation, prev_rank)]:
        work.wait()
    return activation


EXCHANGES = {
    "blocking": (blocking_send_forward_recv_backward, blocking_send_backward_recv_forward),
    "ungrouped": (ungrouped_send_forward_recv_backward, ungrouped_send_backward_recv_forward),
    "parity": (parity_send_forward_recv_backward, parity_send_backward_recv_forward),
    "batched": (send_forward_recv_backward, send_backward_recv_forward),
}


class Stage:
    """This rank's stage of the pipeline: its layer, its micro-batches, the activations
    kept for the backward passes, and the order in which it ran them."""

    def __init__(self, rank, world_size, n_micro):
        self.rank, self.n_micro = rank, n_micro
        self.first, self.last = rank == 0, rank == world_size - 1
        self.layer = make_stages(world_size)[rank]
        x_all, y_all = make_batch()
        self.xs, self.ys = x_all.chunk(n_micro), y_all.chunk(n_micro)
        self.mb_shape = (BATCH // n_micro, HIDDEN)
        self.schedule, self.saved, self.loss = [], deque(), 0.0

    def recv_forward(self):
        if self.first:
            return None
        activation = torch.empty(self.mb_shape)
        dist.recv(activation, src=self.rank - 1)
        return activation

    def recv_backward(self):
        if self.last:
            return None
        grad = torch.empty(self.mb_shape)
        dist.recv(grad, src=self.rank + 1)
        return grad

    def forward(self, received):
        i = sum(step.startswith("F") for step in self.schedule)
        inp = self.xs[i] if self.first else received.requires_grad_()
        with span(f"F{i}"):
            out = self.layer(inp)
            if self.last:
                out = nn.functional.mse_loss(out, self.ys[i]) / self.n_micro
                self.loss += out.item()
        self.schedule.append(f"F{i}")
        self.saved.append((inp, out))
        return out

    def backward(self, grad_out):
        i = sum(step.startswith("B") for step in self.schedule)
        inp, out = self.saved.popleft()     # 1F1B: backward in the order of the forwards
        with span(f"B{i}"):
            out.backward(None if self.last else grad_out)
        self.schedule.append(f"B{i}")
        return None if self.first else inp.grad


def run_1f1b(rank, world_size, fwd_exchange, bwd_exchange, n_micro=8):
    """One training step of a `world_size`-stage pipeline with the 1F1B schedule
    (Megatron-LM's non-interleaved schedule). This rank is stage `rank`.

    Returns (schedule, loss, grads): the order of forward/backward passes it ran
    ("F0", "B0", ...), the step's loss (last stage only, else None), and its parameters'
    gradients. The loss of each micro-batch is divided by n_micro, so the gradients equal
    those of the whole batch on the unsplit model.
    """
    if BATCH % n_micro:
        raise ValueError(f"n_micro must divide the batch size {BATCH}, got {n_micro}")
    stage = Stage(rank, world_size, n_micro)
    n_warmup = min(world_size - rank - 1, n_micro)
    n_steady = n_micro - n_warmup
    for _ in range(n_warmup):                       # warm-up: forwards only
        out = stage.forward(stage.recv_forward())
        if not stage.last:
            dist.send(out.detach(), dst=rank + 1)
    received = stage.recv_forward() if n_steady else None
    for k in range(n_steady):                        # steady state: one F, one B
        out = stage.forward(received)
        grad_out = None if stage.last else fwd_exchange(out.detach(), rank + 1)
        input_grad = stage.backward(grad_out)
        if k == n_steady - 1:
            if not stage.first:
                dist.send(input_grad, dst=rank - 1)
        elif stage.first:
            received = None
        else:
            received = bwd_exchange(input_grad, rank - 1)
    for _ in range(n_warmup):                       # cool-down: backwards only
        input_grad = stage.backward(stage.recv_backward())
        if not stage.first:
            dist.send(input_grad, dst=rank - 1)
    return (stage.schedule, stage.loss if stage.last else None,
            [p.grad.clone() for p in stage.layer.parameters()])


def pipeline_step(rank, world_size, mode="batched", n_micro=8):
    """Worker: one 1F1B training step with the neighbour exchange `mode` ("blocking",
    "ungrouped", "parity" or "batched": your `send_forward_recv_backward` /
    `send_backward_recv_forward`)."""
    fwd_exchange, bwd_exchange = EXCHANGES[mode]
    return run_1f1b(rank, world_size, fwd_exchange, bwd_exchange, n_micro)


# ----------------------------------------------------------------------------------------
# Ring attention (context parallelism)
# ----------------------------------------------------------------------------------------

def make_qkv(seq_len, dim, seed=2):
    """Full query, key and value tensors (seq_len x dim); each rank takes its block."""
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(seq_len, dim, generator=g) for _ in range(3))


def full_attention(q, k, v):
    """softmax(q k^T / sqrt(d)) v on the whole sequence: the reference."""
    scores = q @ k.T / q.shape[-1] ** 0.5
    return torch.softmax(scores, dim=-1) @ v


@exercise
def rotate_kv(k, v):
    """Start one step of the K/V rotation: send this rank's current key block `k` and
    value block `v` to rank + 1 and receive rank - 1's blocks, in ONE
    `dist.batch_isend_irecv` call, into NEW tensors (never into `k` or `v`, which are
    being sent and are still being used for compute).

    Returns (k_next, v_next, works) without waiting: the caller computes on `k`, `v` while
    the transfer runs, then waits for every Work in `works` before touching
    k_next/v_next (or modifying k/v). Same shapes and dtypes as k and v; world size >= 2.

    The exchange must be right on NCCL too (lesson 09 is a GPU pattern): NCCL ignores tags
    and pairs the sends and receives between two ranks by their order alone (lesson 02).
    Telling K from V by tags is not enough: the grader also runs it with every tag ignored.

    Hint: four P2POps. gloo matches messages between two ranks in FIFO order per tag, NCCL
    in FIFO order whatever the tags, so post the two sends and the two receives in the same
    order (k first, then v).
    """
    raise todo("notebook 09, 'Exercise 2: rotate K and V'")


def merge_blocks(out, lse, block_out, block_lse):
    """Online softmax: combine two partial attention results over disjoint key blocks.
    `lse` is the log-sum-exp of each query's scores over the keys seen so far."""
    new_lse = torch.logaddexp(lse, block_lse)
    out = out * torch.exp(lse - new_lse).unsqueeze(-1) + \
        block_out * torch.exp(block_lse - new_lse).unsqueeze(-1)
    return out, new_lse


def ring_attention(q, k, v, rotate=None, overlap=True):
    """Attention of this rank's query block over the whole sequence, whose key/value
    blocks are spread over the ranks (rank r holds block r). `world_size` steps; in each,
    the current K/V block is used and (but in the last) passed on with `rotate`.

    overlap=True posts the rotation before computing on the current block (double
    buffering); overlap=False waits for it first (the comparison on the timeline).
    """
    rotate = rotate or rotate_kv
    world_size = dist.get_world_size()
    scale = q.shape[-1] ** -0.5
    out = torch.zeros_like(q)
    lse = torch.full(q.shape[:-1], float("-inf"), dtype=q.dtype)
    for step in range(world_size):
        works = []
        if step < world_size - 1:
            k_next, v_next, works = rotate(k, v)
            if not overlap:
                for w in works:
                    w.wait()
                works = []      # wait once only: on gloo a second wait() blocks (timeout)
        with span(f"attention block {step}"):
            scores = q @ k.T * scale
            block_lse = torch.logsumexp(scores, dim=-1)
            block_out = torch.softmax(scores, dim=-1) @ v
            out, lse = merge_blocks(out, lse, block_out, block_lse)
        for w in works:
            w.wait()
        if step < world_size - 1:
            k, v = k_next, v_next               # swap buffers: the received block is next
    return out


def ring_attention_worker(rank, world_size, seq_len=1024, dim=64, overlap=True):
    """Worker: rank r takes block r of q, k, v and returns its block of the output."""
    q, k, v = (t.chunk(world_size)[rank].contiguous() for t in make_qkv(seq_len, dim))
    return ring_attention(q, k, v, overlap=overlap)


# ----------------------------------------------------------------------------------------

def demo(rank, world_size):
    """Lesson 09 demo: ring attention on every rank, checked against full attention."""
    seq_len, dim = 128 * world_size, 32
    q, k, v = (t.chunk(world_size)[rank].contiguous() for t in make_qkv(seq_len, dim))
    try:
        out = ring_attention(q, k, v)
    except NotImplementedError:
        # Every rank raises at its first rotate_kv, before any communication, so all fall
        # back together: one 1F1B pipeline step with the parity exchange (no exercise).
        schedule, _, _ = pipeline_step(rank, world_size, "parity")
        return ("rotate_kv is not written yet (exercise 2); a 1F1B step with the parity "
                "exchange ran: " + " ".join(schedule))
    full = full_attention(*make_qkv(seq_len, dim)).chunk(world_size)[rank]
    return f"ring attention equals full attention: {torch.allclose(out, full, atol=1e-5)}"


if __name__ == "__main__":
    cli.main(demo)


# ----------------------------------------------------------------------------------------
# torch.distributed.pipelining: PyTorch's own schedules, on the same stages
# ----------------------------------------------------------------------------------------

def torch_pipeline_step(rank, world_size, schedule="1F1B", n_micro=8):
    """Worker: the same training step as `pipeline_step`, run by PyTorch's own
    `torch.distributed.pipelining` (`Schedule1F1B` or `ScheduleGPipe`) on the same stages,
    batch and loss. Returns (loss or None, this stage's gradients) like `run_1f1b`."""
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe
    layer = make_stages(world_size)[rank]
    stage = PipelineStage(layer, rank, world_size, torch.device("cpu"))
    kind = {"1F1B": Schedule1F1B, "GPipe": ScheduleGPipe}[schedule]
    # scale_grads (default): the gradients are divided by n_micro, as run_1f1b's loss is.
    runner = kind(stage, n_micro, loss_fn=nn.functional.mse_loss)
    x, y = make_batch()
    losses = []
    if rank == 0:
        runner.step(x)
    elif rank == world_size - 1:
        runner.step(target=y, losses=losses)
    else:
        runner.step()
    loss = sum(each.item() for each in losses) / n_micro if losses else None
    return loss, [p.grad.clone() for p in layer.parameters()]


def object_messages(rank, world_size):
    """Worker: rank 0 sends a Python object with `dist.send_object_list`, rank 1 receives it
    with `dist.recv_object_list`. Returns, on rank 0, the length of the object's pickle;
    on rank 1, the object received."""
    import pickle
    obj = {"step": 7, "lr": 0.1, "stage": "warm-up"}
    if rank == 0:
        dist.send_object_list([obj], dst=1)
        return len(pickle.dumps(obj))
    got = [None]
    dist.recv_object_list(got, src=0)
    return got[0]
