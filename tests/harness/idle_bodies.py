"""Bodies stuck outside torch.distributed (its calls done, then a wait of their own
that never ends), told within seconds at their line while graded (launch's idle_after)."""
import ctypes
import os
import signal
import time

import torch
import torch.distributed as dist

PR_SET_PDEATHSIG = 1     # linux/prctl.h: a child killed when its parent dies


def _swap(tensor):
    """A right exchange with the other rank of a pair: every call completes."""
    peer = dist.get_rank() ^ 1
    received = torch.empty_like(tensor)
    for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, tensor, peer),
                                        dist.P2POp(dist.irecv, received, peer)]):
        work.wait()
    return received


def exchange_then_sleeps(tensor):
    """Then waits, politely, for a value that never comes (no call is in flight)."""
    received = _swap(tensor)
    while not received.isnan().any():
        time.sleep(0.1)
    return received


def exchange_then_spins(tensor):
    """Then waits in a busy loop: CPU used, nothing posted or completed."""
    received = _swap(tensor)
    total = 0.0
    while total >= 0:
        total += float(received[0])
    return received


def exchange_then_starved(tensor, seconds=8.0):
    """Then computes for `seconds` on a core that a busier process holds: it waits for the
    core, using almost no CPU of its own (a rank on a loaded machine). Slow, not stuck: it
    returns."""
    received = _swap(tensor)
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    rank_pid, busier = os.getpid(), os.fork()
    if busier == 0:                 # nice 0 on the same core, until killed or the rank dies
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        while os.getppid() == rank_pid:
            pass
        os._exit(0)
    os.nice(19)                     # this worker exits after the launch
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass
    finally:
        os.kill(busier, signal.SIGKILL)
        os.waitpid(busier, 0)
    return received
