"""Nothing a launch opens is reachable from outside: every socket that the course's
processes listen on, during a launch, a grader run and a benchmark, is on loopback.

A scanner thread (labs/harness/commands/listeners.py, which lesson 11 uses on a torchrun
job) reads the listening TCP sockets of the machine (/proc/net/tcp, tcp6) and keeps those
whose inode one of the processes under watch holds (the test process, or a benchmark's, and
all their descendants: the fork server and the workers).
"""
import os
import socket
import subprocess
import sys
import time

import pytest

from labs import launch
from labs.harness.commands.listeners import ListenerScan, own_listeners
from labs.harness.launch.rendezvous import loopback_interface
from tests.graders import test_p2p

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")


def _assert_loopback_only(seen: dict, at_least: int, what: str):
    assert len(seen) >= at_least, f"{what}: saw only {seen}: the scan missed the launch"
    outside = {a: pid for a, pid in seen.items() if not a.startswith(("127.", "::1:"))}
    assert not outside, f"{what} listened beyond loopback: {outside}"


def hold(rank, world_size, seconds):
    """Stay in the group long enough for the scanner to see every listener."""
    time.sleep(seconds)
    return rank


def test_a_launch_listens_on_loopback_only():
    with ListenerScan(os.getpid()) as scan:
        assert launch(hold, world_size=3, args=(0.5,)) == [0, 1, 2]
    # the store, and each rank's gloo listener
    _assert_loopback_only(scan.seen, 1 + 3, "launch")


def test_a_grader_run_listens_on_loopback_only(impl):
    with ListenerScan(os.getpid()) as scan:
        test_p2p.test_pass_token(impl, 3)
    _assert_loopback_only(scan.seen, 1 + 3, "a grader run")


@pytest.mark.slow           # spawned workers import torch each: make test, not test-fast
def test_a_benchmark_listens_on_loopback_only():
    command = [sys.executable, "-m", "labs.bench", "launch", "--world-size", "2", "--repeats",
               "1", "--spawn-repeats", "1"]
    bench = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with ListenerScan(bench.pid) as scan:
        out, _ = bench.communicate(timeout=240)
    assert bench.returncode == 0, out.decode()
    _assert_loopback_only(scan.seen, 1 + 2, "python -m labs.bench launch")


def test_the_loopback_interface_is_found():
    assert loopback_interface() in ("lo", "lo0")


def test_own_listeners_asks_each_socket_where_it_listens():
    """Lesson 11's TCPStore claim reads its store's address this way, not from /proc/net/tcp
    (a line of which a busy machine can hide from a read)."""
    with socket.socket() as server, socket.socket() as unbound, socket.socket() as client:
        server.bind(("127.0.0.1", 0))
        server.listen()
        unbound.bind(("0.0.0.0", 0))                    # bound, not listening: not a listener
        client.connect(server.getsockname())            # connected, not listening
        port = server.getsockname()[1]
        quiet = (unbound.getsockname()[1], client.getsockname()[1])
        found = own_listeners()
    assert f"127.0.0.1:{port}" in found, found
    assert not [a for a in found if int(a.rsplit(":", 1)[1]) in quiet], found
