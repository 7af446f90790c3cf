"""Notebook 01's plot and widget: gloo's blocking send, seen on a timeline."""
import ipywidgets as widgets
import matplotlib.pyplot as plt

from labs import launch
from labs.harness.plots import timeline
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
    timeline(results.trace, title=f"receiver sleeps {delay:g} s before its recv")
    plt.show()
    return results


def rendezvous_explorer():
    """A slider for the receiver's delay; each change launches real workers and replots."""
    widgets.interact_manual(plot_rendezvous, delay=widgets.FloatSlider(
        value=0.3, min=0.0, max=1.0, step=0.05, description="recv delay (s)"))
