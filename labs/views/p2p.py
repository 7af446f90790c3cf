"""Notebook 01's plot and widget: gloo's blocking send, seen on a timeline."""
import ipywidgets as widgets
from labs import launch
from labs.harness.notebook.figures import detached_axes, show
from labs.harness.notebook.plots import timeline
from labs.p2p import rendezvous_send


def send_timing(trace):
    """From a rendezvous_send trace: (send posted, send done, recv posted, recv done) in s."""
    send = next(e for e in trace if e.rank == 0 and e.op == "send")
    recv = next(e for e in trace if e.rank == 1 and e.op == "recv")
    return send.t_post, send.t_done, recv.t_post, recv.t_done


def plot_rendezvous(delay):
    """Run rendezvous_send with the receiver sleeping `delay` s; plot the timeline."""
    results = launch(rendezvous_send, 2, args=(float(delay),), quiet=True)
    send_post, send_done, recv_post, _ = send_timing(results.trace)
    print(f"receiver delay {delay:g} s: the send returned after the recv was posted:",
          send_done >= recv_post)
    # A figure outside pyplot, shown once drawn: in JupyterLab a click can run while a
    # kernel subshell thread handles another widget message, and that thread's post-execute
    # hooks redraw and flush every pyplot figure (a blank or half-drawn PNG). Same size as
    # `timeline`'s own figure for two ranks.
    fig, ax = detached_axes((9, 0.7 + 0.6 * 2))
    timeline(results.trace, title=f"receiver sleeps {delay:g} s before its recv", ax=ax)
    show(fig)
    return results


def _plot_only(delay):
    """What the explorer's button runs: the plot and its line, without a return value
    (interact would print the Results list under the figure)."""
    plot_rendezvous(delay)


def rendezvous_explorer():
    """A slider for the receiver's delay; each click launches real workers and replots."""
    widgets.interact_manual(_plot_only, delay=widgets.FloatSlider(
        value=0.3, min=0.0, max=1.0, step=0.05, description="receiver's delay (s)",
        style={"description_width": "initial"}, layout=widgets.Layout(width="420px")))


def start_skew(trace) -> None:
    """Print when each rank posted its first call (ms after the run's first call), and how
    much of rank 0's final receive was spent before the last rank had even started: the
    token ring's long blue bar, read from the trace."""
    first = {}
    for e in trace:
        first[e.rank] = min(first.get(e.rank, e.t_post), e.t_post)
    t0, last = min(first.values()), max(first.values())
    for rank in sorted(first):
        print(f"rank {rank} posted its first call at {(first[rank] - t0) * 1e3:6.1f} ms")
    wait = next(e for e in trace if e.rank == 0 and e.op in ("recv", "irecv", "wait")
                and e.t_post > first[0] and e.t_done is not None)
    before = max(0.0, last - wait.t_post)
    print(f"rank 0's {wait.op} waited {(wait.t_done - wait.t_post) * 1e3:.1f} ms, "
          f"{before * 1e3:.1f} ms of it before the last rank had started")
