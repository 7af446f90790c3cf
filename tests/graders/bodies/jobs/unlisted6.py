"""Wrong bodies of the second round, part 5: lesson 11's job, whose grader runs under
torchrun (tests/graders/test_jobs.py), outside the course's launcher."""
import datetime

import torch
import torch.distributed as dist

from labs.harness.commands.cli import format_result
from tests.graders.bodies import copies

pass_token = copies.p2p.pass_token


def ring_job_pg_allreduce(numel=6, timeout_s=30.0):
    """Joins, sums with the process group's own allreduce, passes a token around "to use
    the ring", prints, leaves: every step right but the sum."""
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=timeout_s))
    try:
        rank = dist.get_rank()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        dist.distributed_c10d._get_default_group().allreduce([tensor]).wait()
        pass_token(torch.zeros(1))
        print(format_result(rank, tensor), flush=True)
        return tensor
    finally:
        dist.destroy_process_group()


def ring_job_functional(numel=6, timeout_s=30.0):
    """The same, the sum from a functional collective (what torch.compile emits)."""
    import torch.distributed._functional_collectives as fc
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=timeout_s))
    try:
        rank = dist.get_rank()
        tensor = torch.arange(numel, dtype=torch.float32) + 10 * rank
        tensor.copy_(fc.all_reduce(tensor, "sum", dist.group.WORLD))
        pass_token(torch.zeros(1))
        print(format_result(rank, tensor), flush=True)
        return tensor
    finally:
        dist.destroy_process_group()
