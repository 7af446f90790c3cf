"""Notebook 09's notebook-side code: two checks on a traced run (do two neighbours'
ungrouped ops pair up in order? did each K/V rotation overlap the compute of its step?)
and the ring-attention figure."""
import matplotlib.pyplot as plt

from labs.harness.notebook.plots import timeline

P2P = ("send", "recv", "isend", "irecv")


def _calls_with(trace, rank, peer):
    """`rank`'s point-to-point calls with `peer`, in posting order, as lists of events:
    one event per call, or all the events of one batch_isend_irecv (one grouped call)."""
    calls = []
    for e in trace:
        if e.rank != rank or e.op not in P2P or e.peer != peer:
            continue
        if e.batch is not None and calls and calls[-1][0].batch == e.batch:
            calls[-1].append(e)
        else:
            calls.append([e])
    return calls


def _kinds(call, flip=False):
    kinds = ["send" if "send" in e.op else "recv" for e in call]
    if flip:
        kinds = ["recv" if k == "send" else "send" for k in kinds]
    return sorted(kinds)


def in_order_pairing(trace, world_size):
    """Per pair of neighbouring stages: does the k-th call one posts with the other meet
    the k-th call the other posts with it (a send facing a receive; a batch facing a batch
    of the opposite ops)? That is what a backend that runs the ops between two ranks in
    order, one at a time, needs. One line per pair: the first call that does not pair."""
    lines = []
    for s in range(world_size - 1):
        mine, theirs = _calls_with(trace, s, s + 1), _calls_with(trace, s + 1, s)
        bad = next((k for k, (a, b) in enumerate(zip(mine, theirs))
                    if _kinds(a, flip=True) != _kinds(b)), None)
        if bad is None and len(mine) == len(theirs):
            lines.append(f"stages {s} and {s + 1}: all {len(mine)} calls pair up in order")
        elif bad is None:
            lines.append(f"stages {s} and {s + 1}: {len(mine)} calls against {len(theirs)}")
        else:
            a, b = mine[bad], theirs[bad]
            lines.append(f"stages {s} and {s + 1}: call {bad + 1} is {a[0].describe()} on "
                         f"stage {s}, and {b[0].describe()} on stage {s + 1}")
    return lines


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


def _label_blocks(ax, trace):
    """Write K or V on each transfer bar (rotate_kv posts k first, then v), and the step on
    each compute bar. The timeline draws one bar per event, in the trace's order."""
    bars = ax.patches
    if len(bars) != len(trace):
        return
    seen = {}
    for e, bar in zip(trace, bars):
        if e.op in ("isend", "irecv"):
            nth = seen[(e.rank, e.batch, e.op)] = seen.get((e.rank, e.batch, e.op), -1) + 1
            text = "KV"[nth % 2] + ("\u2192" if e.op == "isend" else "\u2190") + str(e.peer)
        elif e.op == "compute":
            text = e.label.replace("attention block", "attn")
        else:
            continue
        ax.text(bar.get_x() + bar.get_width() / 2, bar.get_y() + bar.get_height() / 2, text,
                ha="center", va="center", fontsize=6, clip_on=True)


def ring_attention_figure(sequential, overlapped):
    """The two ring-attention runs, one above the other, on one time axis; each transfer
    labelled K or V with its peer, each compute bar with its step."""
    fig, axes = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
    runs = [(sequential, "overlap=False: wait for the next block, then compute"),
            (overlapped, "overlap=True: compute while the next block moves")]
    for ax, (trace, title) in zip(axes, runs):
        timeline(trace, ax=ax, title=title, labels=False)
        _label_blocks(ax, trace)
    end = max((e.t_done or e.t_post) for trace, _ in runs for e in trace)
    axes[1].set_xlim(0, end * 1e3 * 1.02)
    axes[0].set_xlabel("")
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------------------
# torch.distributed.pipelining next to the hand-written 1F1B
# ----------------------------------------------------------------------------------------

def data_calls(trace, rank, dtype="float32"):
    """One rank's point-to-point calls that move `dtype` data, one entry per call (a batch is
    one call): '->2' send to 2, '<-0' receive from 0, '[->2 <-2]' one batch of both."""
    calls, batches = [], {}
    for e in trace:
        if e.rank != rank or e.op not in ("send", "recv", "isend", "irecv") or e.dtype != dtype:
            continue
        text = ("->" if "send" in e.op else "<-") + str(e.peer)
        if e.batch is None:
            calls.append([text])
        elif e.batch in batches:
            batches[e.batch].append(text)
        else:
            batches[e.batch] = [text]
            calls.append(batches[e.batch])
    return [c[0] if len(c) == 1 else "[" + " ".join(c) + "]" for c in calls]


def side_by_side(runs: dict, world_size: int):
    """Per stage, each run's data calls in program order; then whether every run sends and
    receives the same messages (peer, direction) in the same order."""
    same = True
    for rank in range(world_size):
        print(f"stage {rank}:")
        flat = []
        for name, run in runs.items():
            calls = data_calls(run.trace, rank)
            print(f"  {name:<14} " + " ".join(calls))
            flat.append([m for c in calls for m in c.strip("[]").split()])
        same = same and all(f == flat[0] for f in flat)
    print("the same messages, in the same order, on every stage:", same)
    return same


def show_pipelining_lines():
    """The lines of torch.distributed.pipelining (this torch's schedules.py) that post its
    point-to-point ops, with their line numbers."""
    import inspect

    import torch.distributed.pipelining.schedules as schedules
    source, first = inspect.getsourcelines(schedules)
    path = "torch/distributed/pipelining/schedules.py"
    for fn in (schedules._batch_p2p, schedules._sorted_batch_p2p, schedules._wait_batch_p2p):
        lines, start = inspect.getsourcelines(fn)
        print(f"{path}, line {start}:")
        print("".join("    " + line for line in lines if line.strip() and
                      not line.strip().startswith(("logger.", "desc_str", "if len(p2p_ops) == 0",
                                                "return []", "return work_by_peer")))
              .rstrip())
        print()
    steady = [(k + 1, line.strip()) for k, line in enumerate(source)
              if "_batch_p2p(fwd_sends + bwd_recvs" in line
              or "_batch_p2p(bwd_sends + fwd_recvs" in line]
    print(f"{path}, class Schedule1F1B, its steady state:")
    for number, line in steady:
        print(f"    line {number}: {line}")
