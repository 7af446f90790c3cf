"""Notebook 06's trace readers: who sent how much, and a timeline without start-up."""
import dataclasses

from labs.ring import bytes_sent


def after_first_barrier(events):
    """The traced events after the last rank left the first barrier, with times counted
    from that moment: a timeline without the ranks' staggered start-up."""
    barriers = {}
    for e in events:
        if e.op == "barrier" and e.rank not in barriers:
            barriers[e.rank] = e.t_done
    t0 = max(barriers.values()) if barriers else 0.0
    return [dataclasses.replace(e, t_post=max(e.t_post - t0, 0.0),
                                t_done=None if e.t_done is None else e.t_done - t0)
            for e in events if e.op != "barrier" and (e.t_done is None or e.t_done >= t0)]


def traffic(events, world_size):
    """Per rank, from a trace: {"batches", "sends", "bytes"} it posted/sent."""
    out = []
    for r in range(world_size):
        sends = [e for e in events if e.rank == r and e.op in ("send", "isend")]
        out.append({"batches": len({e.batch for e in sends if e.batch is not None}),
                    "sends": len(sends),
                    "bytes": bytes_sent(sends)})
    return out
