"""Round 10 (red team): bypasses of the latest hardening (reads/writes of in-flight buffers
outside the dispatcher, private switches reached by computed names), a halo script that
changes the method but keeps the counts, and right bodies in other styles.

(Lesson `jobs`'s bodies of this round; the round's other lessons are in
tests/graders/bodies/<lesson>/red10.py.)
"""

import torch
import torch.distributed as dist


# -- lesson 11's job: the sum computed from the known inputs, one token for show ----------

def ring_job_formula(numel=6, timeout_s=30.0):
    """WRONG (sums nothing over the network: every rank computes the total from the job's known
    inputs, arange + 10 * r, and passes one 1-element token around for show): the grader only
    asks for some point-to-point op, never that the tensor's data travel."""
    import datetime
    import sys
    from labs.harness.commands.cli import format_result
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=timeout_s))
    try:
        rank, ws = dist.get_rank(), dist.get_world_size()
        base = torch.arange(numel, dtype=torch.float32)
        token = torch.tensor([float(rank)])
        got = torch.empty(1)
        for w in dist.batch_isend_irecv([dist.P2POp(dist.isend, token, (rank + 1) % ws),
                                         dist.P2POp(dist.irecv, got, (rank - 1) % ws)]):
            w.wait()
        tensor = ws * base + 10 * sum(range(ws))
        sys.stdout.write(format_result(rank, tensor) + "\n")
        sys.stdout.flush()
        return tensor
    finally:
        dist.destroy_process_group()
