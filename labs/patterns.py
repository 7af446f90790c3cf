"""Lesson 09: why production systems batch their point-to-point ops.

Two patterns, each on real workers and checked against the unsplit computation:

  * Pipeline parallelism with the 1F1B schedule: a small MLP split into one stage per
    rank. In the steady state neighbouring stages send to each other at the same moment
    (activations forward, gradients backward). Blocking send-then-recv deadlocks on gloo;
    a batch (`send_forward_recv_backward` / `send_backward_recv_forward`, as in Megatron-LM
    and picotron) or rank-parity ordering does not. `pipeline_step` runs one training step.
  * Ring attention (context parallelism): every rank keeps its query block while key and
    value blocks travel around the ring, one batch per step, received into fresh buffers
    while the current block is being used (double buffering). `ring_attention` merges the
    partial results with log-sum-exp and equals full attention.

Exercises: `send_forward_recv_backward`, `send_backward_recv_forward` (notebook 09,
Exercise 1) and `rotate_kv` (Exercise 2). The notebook's trace check (did the rotation
overlap the compute?): labs.views.patterns.
"""
from collections import deque

import torch
import torch.distributed as dist
import torch.nn as nn

from labs.harness import cli
from labs.harness.exercises import exercise, todo
from labs.harness.tracing import span

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
    sends at the same time; `output` must not be modified. Any shape and dtype.

    Hint: one `dist.batch_isend_irecv` with a `P2POp(dist.isend, ...)` and a
    `P2POp(dist.irecv, ...)` into `torch.empty_like(output)`, then wait for every request.
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


def parity_send_forward_recv_backward(output, next_rank):
    """The fallback without batching: even ranks send first, odd ranks receive first.
    Neighbours have different parities, so one side always receives while the other sends
    (Megatron-LM's non-batched path orders its isend/irecv by rank parity the same way)."""
    grad = torch.empty_like(output)
    if dist.get_rank() % 2 == 0:
        dist.send(output, dst=next_rank)
        dist.recv(grad, src=next_rank)
    else:
        dist.recv(grad, src=next_rank)
        dist.send(output, dst=next_rank)
    return grad


def parity_send_backward_recv_forward(input_grad, prev_rank):
    """The same parity-ordered exchange, with the previous stage."""
    return parity_send_forward_recv_backward(input_grad, prev_rank)


EXCHANGES = {
    "blocking": (blocking_send_forward_recv_backward, blocking_send_backward_recv_forward),
    "parity": (parity_send_forward_recv_backward, parity_send_backward_recv_forward),
    "batched": (send_forward_recv_backward, send_backward_recv_forward),
}


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
    stage = make_stages(world_size)[rank]
    first, last = rank == 0, rank == world_size - 1
    x_all, y_all = make_batch()
    xs, ys = x_all.chunk(n_micro), y_all.chunk(n_micro)
    mb_shape = (BATCH // n_micro, HIDDEN)
    schedule, saved, total_loss = [], deque(), 0.0
    next_fwd, next_bwd = 0, 0

    def recv_forward():
        if first:
            return None
        activation = torch.empty(mb_shape)
        dist.recv(activation, src=rank - 1)
        return activation

    def recv_backward():
        if last:
            return None
        grad = torch.empty(mb_shape)
        dist.recv(grad, src=rank + 1)
        return grad

    def forward(received):
        nonlocal next_fwd, total_loss
        i = next_fwd
        next_fwd += 1
        inp = xs[i] if first else received.requires_grad_()
        with span(f"F{i}"):
            out = stage(inp)
            if last:
                out = nn.functional.mse_loss(out, ys[i]) / n_micro
                total_loss += out.item()
        schedule.append(f"F{i}")
        saved.append((inp, out))
        return out

    def backward(grad_out):
        nonlocal next_bwd
        i = next_bwd
        next_bwd += 1
        inp, out = saved.popleft()          # 1F1B: backward in the order of the forwards
        with span(f"B{i}"):
            out.backward(None if last else grad_out)
        schedule.append(f"B{i}")
        return None if first else inp.grad

    n_warmup = min(world_size - rank - 1, n_micro)
    n_steady = n_micro - n_warmup
    for _ in range(n_warmup):                       # warm-up: forwards only
        out = forward(recv_forward())
        if not last:
            dist.send(out.detach(), dst=rank + 1)
    received = recv_forward() if n_steady else None
    for k in range(n_steady):                        # steady state: one F, one B
        out = forward(received)
        grad_out = None if last else fwd_exchange(out.detach(), rank + 1)
        input_grad = backward(grad_out)
        if k == n_steady - 1:
            if not first:
                dist.send(input_grad, dst=rank - 1)
        elif first:
            received = None
        else:
            received = bwd_exchange(input_grad, rank - 1)
    for _ in range(n_warmup):                       # cool-down: backwards only
        input_grad = backward(recv_backward())
        if not first:
            dist.send(input_grad, dst=rank - 1)
    return schedule, (total_loss if last else None), [p.grad.clone() for p in stage.parameters()]


def pipeline_step(rank, world_size, mode="batched", n_micro=8):
    """Worker: one 1F1B training step with the neighbour exchange `mode`
    ("blocking", "parity" or "batched": your `send_forward_recv_backward` /
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

    Hint: four P2POps. gloo matches messages between two ranks in FIFO order per tag, so
    post the two sends and the two receives in the same order (k first, then v).
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


def wait_twice(rank, world_size):
    """Two ranks swap a tensor with one batch, wait for both requests, then wait for the
    receive a second time (as a caller of a rotate_kv that already waited would)."""
    peer = 1 - rank
    received = torch.zeros(3)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.ones(3), peer),
                                   dist.P2POp(dist.irecv, received, peer)])
    for req in reqs:
        req.wait()
    print(f"first wait done, received {received.tolist()}")
    reqs[1].wait()
    return "second wait done"


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
