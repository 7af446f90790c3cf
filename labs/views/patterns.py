"""Notebook 09's trace check: did each K/V rotation overlap the compute of its step?"""


def rotation_overlaps_compute(trace, world_size):
    """From a traced ring-attention run: on every rank, was each rotation posted before the
    compute of the same step started, and waited for only after it ended? (Program order,
    not timing.)"""
    ok = True
    for rank in range(world_size):
        events = [e for e in trace if e.rank == rank]
        spans = [e for e in events if e.op == "compute"]
        for step in range(world_size - 1):
            posted = [e for e in events if e.batch == step and e.op in ("isend", "irecv")]
            waits = [e for e in events if e.batch == step and e.op == "wait"]
            compute = spans[step]
            ok &= bool(posted) and all(e.t_post <= compute.t_post for e in posted)
            ok &= bool(waits) and all(e.t_post >= compute.t_done for e in waits)
    return ok
