"""Wrong clocks for ping_pong (lesson 01), written after its check was last changed: each
returns the right replies and positive times, but not each round's own round trip."""
import time

import torch
import torch.distributed as dist


def _bounce(tensor, rounds, clock):
    """Rank 0 bounces `tensor` `rounds` times with rank 1; `clock(send, recv)` runs one round
    and returns what rank 0 reports as its time. Rank 1 adds one and sends it back."""
    rank = dist.get_rank()
    if rank == 0:
        current, replies, seconds = tensor, [], []
        for _ in range(rounds):
            reply = torch.empty_like(tensor)
            seconds.append(clock(lambda: dist.send(current, dst=1),
                                 lambda: dist.recv(reply, src=1)))
            replies.append(reply)
            current = reply
        return replies, seconds
    if rank == 1:
        received = []
        for _ in range(rounds):
            buf = torch.empty_like(tensor)
            dist.recv(buf, src=0)
            received.append(buf)
            dist.send(buf + 1, dst=0)
        return received
    return None


def pp_clock_around_recv_only(tensor, rounds):
    """WRONG: the clock starts after the send returned, so a send that waits is not counted."""
    def clock(send, recv):
        send()
        t0 = time.perf_counter()
        recv()
        return time.perf_counter() - t0
    return _bounce(tensor, rounds, clock)


def pp_one_way_latency(tensor, rounds):
    """WRONG: half the round trip (a one-way latency), reported as the round trip."""
    def clock(send, recv):
        t0 = time.perf_counter()
        send()
        recv()
        return (time.perf_counter() - t0) / 2
    return _bounce(tensor, rounds, clock)


def pp_milliseconds(tensor, rounds):
    """WRONG: milliseconds, where the exercise asks for seconds."""
    def clock(send, recv):
        t0 = time.perf_counter()
        send()
        recv()
        return (time.perf_counter() - t0) * 1000
    return _bounce(tensor, rounds, clock)


def pp_cumulative(tensor, rounds):
    """WRONG: time since the first send, not each round's own."""
    start = time.perf_counter()

    def clock(send, recv):
        send()
        recv()
        return time.perf_counter() - start
    return _bounce(tensor, rounds, clock)


def pp_previous_round(tensor, rounds):
    """WRONG: each round reports the round before it (the first, a guess of 100 ms)."""
    last = [0.1]

    def clock(send, recv):
        t0 = time.perf_counter()
        send()
        recv()
        shown, last[0] = last[0], time.perf_counter() - t0
        return shown
    return _bounce(tensor, rounds, clock)
