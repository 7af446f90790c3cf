"""The positional sums probe (labs/harness/grading/sums.py) and what the record notes about
a message on it (buffers.decoded), without workers: positions that grow with the element,
block by block where they do not all fit the dtype, and descents counted per message."""
import pytest
import torch
import torch.nn as nn

from labs.harness.grading.buffers import decoded
from labs.harness.grading.sums import pieces, probe_args


@pytest.mark.parametrize("dtype, numel, world_size", [
    (torch.float32, 4099, 8), (torch.float32, (1 << 20) + 3, 3),
    (torch.float32, (1 << 20) + 3, 8), (torch.bfloat16, (1 << 20) + 3, 3),
    (torch.float64, 5000, 8), (torch.int32, 1000, 7)])
def test_positions_grow_with_the_element_and_name_the_ranks(dtype, numel, world_size):
    rank = world_size - 1
    (probe,) = probe_args((torch.zeros(numel, dtype=dtype),), world_size, rank,
                          positional=True)
    values = probe.double()
    assert torch.all(torch.remainder(values, 2 ** world_size) == 2 ** rank)
    positions = torch.div(values, 2 ** world_size, rounding_mode="floor")
    assert torch.all(positions[1:] >= positions[:-1])              # never a descent
    assert len(torch.unique(positions)) > 1                       # and order to see
    # The sum over every rank is still exact in the dtype, at every position.
    total = sum(probe_args((torch.zeros(numel, dtype=dtype),), world_size, r,
                           positional=True)[0].double() for r in range(world_size))
    assert torch.all(torch.remainder(total, 2 ** world_size) == 2 ** world_size - 1)


def _chunk(world_size=3, numel=(1 << 20) + 3):
    (probe,) = probe_args((torch.zeros(numel),), world_size, 0, positional=True)
    return probe[1000:300000]


def test_a_reversed_or_rotated_large_chunk_has_descents_a_slice_has_none():
    chunk = _chunk()
    assert decoded(chunk, 3)[1] == 0
    assert decoded(chunk[::7], 3)[1] == 0                          # strided: in order
    assert decoded(chunk.flip(0), 3)[1] > 1
    assert decoded(torch.roll(chunk, 1), 3)[1] == 1
    interleaved = torch.cat([chunk[0::2], chunk[1::2]])
    assert decoded(interleaved, 3)[1] == 1


def test_a_delta_encoded_chunk_adds_up_no_rank():
    chunk = _chunk()
    delta = chunk - chunk[0]
    delta[0] = chunk[0]
    assert decoded(delta, 3)[2] > 0


def test_a_message_may_descend_once_per_piece_of_another_gradient():
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 3))
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    (probe,) = probe_args((model,), 2, 1, positional=True)
    starts, loose = pieces((model,), 2)
    assert starts == (0, 32, 40, 64) and loose == 0
    grads = [p.grad.reshape(-1) for p in probe.parameters()]
    backwards = torch.cat(grads[::-1])                      # DDP's order: 3 descents, 4 pieces
    _, descents, _, count = decoded(backwards, 2, starts)
    assert (descents, count) == (3, 4)
    one = grads[0]
    interleaved = torch.cat([one[0::2], one[1::2]])       # 1 descent inside one gradient
    _, descents, _, count = decoded(interleaved, 2, starts)
    assert (descents, count) == (1, 1)
