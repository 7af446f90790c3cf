"""The second call (grading/again.py) is made by every rank of a call or by none: the
decision reads the arguments whose sizes every rank shares (Method.probe_sizes). A
scatter's chunks exist on its root alone: counted, the root called the body again by
itself, and the grader hung on the reference."""
import pytest
import torch
import torch.distributed as dist

from labs.harness.grading.compare import Method
from labs.harness.grading.graded import GradedBody
from labs.harness.grading.run import GradeFailure, grade

pytestmark = pytest.mark.slow

# 512 KiB of float32 per rank: under the 1 MiB at which a larger call is probed again, while
# the root's arguments (its chunks too) are over it.
NUMEL = 1 << 17


def scatter(tensor, chunks, src):
    """`chunks[r]` (on src only) into `tensor` on rank r."""
    if dist.get_rank() != src:
        dist.recv(tensor, src=src)
        return
    works = [dist.isend(c, dst=r) for r, c in enumerate(chunks) if r != src]
    tensor.copy_(chunks[src])
    for work in works:
        work.wait()


def scatter_twice(rank, world_size, probe_sizes):
    """A grader's worker: a small call, then a large one, graded with the given method."""
    method = Method(why="src sends rank r its chunk", writes=(0,), returns="nothing",
                    probe_sizes=probe_sizes)
    body = GradedBody("scatter", scatter, scatter, method)
    for numel in (4, NUMEL):
        chunks = ([torch.full((numel,), float(r)) for r in range(world_size)]
                  if rank == 0 else None)
        out = torch.empty(numel)
        body(out, chunks, 0)
        assert torch.equal(out, torch.full((numel,), float(rank)))
    return True


@pytest.mark.parametrize("world_size", [2, 3])
def test_every_rank_calls_again_or_none_when_an_argument_is_on_the_root_only(world_size):
    assert grade(scatter_twice, world_size, args=((0,),)) == [True] * world_size


def test_counting_an_argument_only_the_root_has_desynchronises_the_ranks():
    """The test above can fail: with every argument counted, the root alone calls again."""
    with pytest.raises(GradeFailure, match="hung"):
        grade(scatter_twice, 2, args=((),), timeout=10)
