"""Nothing a launch opens is reachable from outside: every socket that the course's
processes listen on, during a launch, a grader run and a benchmark, is on loopback.

A scanner thread reads the listening TCP sockets of the machine (/proc/net/tcp, tcp6) and
keeps those whose inode one of the processes under watch holds (the test process, or a
benchmark's, and all their descendants: the fork server and the workers).
"""
import os
import subprocess
import sys
import threading
import time

import pytest

from labs import launch
from labs.harness.launch.rendezvous import loopback_interface
from tests import procs
from tests.graders import test_p2p

LISTEN = "0A"                  # TCP state LISTEN in /proc/net/tcp
pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads /proc")


def _listening() -> dict[str, str]:
    """{socket inode: 'address:port'} of every listening TCP socket on the machine."""
    found = {}
    for name in ("tcp", "tcp6"):
        with open(f"/proc/net/{name}") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == LISTEN:
                    found[fields[9]] = _address(fields[1])
    return found


def _address(hex_address: str) -> str:
    """'0100007F:1F90' -> '127.0.0.1:8080' (IPv4); IPv6 as ip6:<hex>:port."""
    ip, port = hex_address.split(":")
    if len(ip) == 8:
        ip = ".".join(str(int(ip[i:i + 2], 16)) for i in (6, 4, 2, 0))
    else:
        ip = {"0" * 32: "::", "0" * 24 + "01000000": "::1"}.get(ip, f"ip6:{ip}")
    return f"{ip}:{int(port, 16)}"


def _inodes_of(pids) -> dict[str, int]:
    """{socket inode: pid} of the sockets these processes hold."""
    held = {}
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    held[target[8:-1]] = pid
        except OSError:
            continue              # it ended meanwhile
    return held


class Scanner(threading.Thread):
    """Collects {address: pid} of what `root` and its descendants listen on, until stopped."""

    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root, self.seen, self.done = root, {}, threading.Event()

    def run(self):
        while not self.done.is_set():
            table = procs.table()
            tree = {self.root} | {pid for pid in table if _descends(pid, self.root, table)}
            held = _inodes_of(tree)
            for inode, address in _listening().items():
                if inode in held:
                    self.seen[address] = held[inode]
            time.sleep(0.05)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join()


def _descends(pid, root, table) -> bool:
    while pid in table and pid > 1:
        pid = table[pid].ppid
        if pid == root:
            return True
    return False


def _assert_loopback_only(seen: dict, at_least: int, what: str):
    assert len(seen) >= at_least, f"{what}: saw only {seen}: the scan missed the launch"
    outside = {a: pid for a, pid in seen.items() if not a.startswith(("127.", "::1:"))}
    assert not outside, f"{what} listened beyond loopback: {outside}"


def hold(rank, world_size, seconds):
    """Stay in the group long enough for the scanner to see every listener."""
    time.sleep(seconds)
    return rank


def test_a_launch_listens_on_loopback_only():
    with Scanner(os.getpid()) as scan:
        assert launch(hold, world_size=3, args=(0.5,)) == [0, 1, 2]
    # the store, and each rank's gloo listener
    _assert_loopback_only(scan.seen, 1 + 3, "launch")


def test_a_grader_run_listens_on_loopback_only(impl):
    with Scanner(os.getpid()) as scan:
        test_p2p.test_pass_token(impl, 3)
    _assert_loopback_only(scan.seen, 1 + 3, "a grader run")


def test_a_benchmark_listens_on_loopback_only():
    command = [sys.executable, "-m", "labs.bench", "launch", "--world-size", "2", "--repeats",
               "1", "--spawn-repeats", "1"]
    bench = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    with Scanner(bench.pid) as scan:
        out, _ = bench.communicate(timeout=240)
    assert bench.returncode == 0, out.decode()
    _assert_loopback_only(scan.seen, 1 + 2, "python -m labs.bench launch")


def test_the_loopback_interface_is_found():
    assert loopback_interface() in ("lo", "lo0")
