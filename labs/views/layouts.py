"""Notebook 13's notebook-side code: which group each call of a traced step belongs to (as
text, stable for nbval), and the step's timeline with each call's group written on it."""
import matplotlib.pyplot as plt

from labs.harness.notebook.plots import timeline

P2P = ("send", "recv", "isend", "irecv")
COLLECTIVES = ("all_reduce", "barrier")


def pipeline_group(rank, world_size, pp):
    """The global ranks of `rank`'s pipeline group in the (pp, dp) grid: its column."""
    dp = world_size // pp
    return [rank % dp + s * dp for s in range(pp)]


def group_of(event, world_size, pp):
    """"pp" for a message to or from a rank of its own pipeline group, "dp" for a
    collective (the step's only ones are the dp group's), "other" for anything else."""
    if event.op in P2P:
        return "pp" if event.peer in pipeline_group(event.rank, world_size, pp) else "other"
    return "dp" if event.op in COLLECTIVES else ""


def calls_by_group(trace, world_size, pp):
    """One line per rank: its calls in order, each with its group (barriers left out)."""
    lines = []
    for rank in range(world_size):
        words = []
        for e in trace:
            if e.rank != rank or e.op == "barrier" or not group_of(e, world_size, pp):
                continue
            where = f" {'to' if 'send' in e.op else 'from'} {e.peer}" if e.op in P2P else ""
            words.append(f"{e.op}{where} [{group_of(e, world_size, pp)}]")
        lines.append(f"rank {rank}: " + ", ".join(words))
    return "\n".join(lines)


def step_timeline(trace, world_size, pp):
    """The traced step, each message labelled with its group."""
    ax = timeline([e for e in trace if e.op != "barrier"],
                  title=f"one step, pp={pp} x dp={world_size // pp}: [pp] messages along the "
                        f"pipeline, [dp] the gradient all_reduce")
    for e in trace:
        group = group_of(e, world_size, pp)
        if group and e.op != "barrier" and e.t_done is not None:
            ax.annotate(group, (e.t_post * 1e3, e.rank + 0.3), fontsize=7, alpha=0.7)
    plt.show()
