"""Who listens where: the TCP sockets a tree of processes listens on, read from /proc.

Linux keeps every listening socket in /proc/net/tcp and tcp6 (address, port, inode), and
every process's open sockets in /proc/<pid>/fd ("socket:[inode]"). A scan joins the two for
a process and its descendants; a `ListenerScan` repeats it while a job runs, so sockets
that live a few seconds are seen.

    with ListenerScan(proc.pid) as scan:
        ...                                  # the job runs
    scan.seen                                # {'0.0.0.0:29500': pid, '127.0.0.1:4101': pid}
"""
from __future__ import annotations

import contextlib
import os
import socket
import threading

from labs.harness.commands.processes import descendants

LISTEN = "0A"                  # the TCP state LISTEN in /proc/net/tcp
EVERY_INTERFACE = ("0.0.0.0", "::")


def listening() -> dict[str, str]:
    """{socket inode: 'address:port'} of every listening TCP socket on the machine."""
    found = {}
    for name in ("tcp", "tcp6"):
        with contextlib.suppress(OSError), open(f"/proc/net/{name}") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == LISTEN:
                    found[fields[9]] = address(fields[1])
    return found


def address(hex_address: str) -> str:
    """'0100007F:1F90' -> '127.0.0.1:8080' (IPv4); IPv6 '::', '::1' or 'ip6:<hex>', ':port'."""
    ip, port = hex_address.split(":")
    if len(ip) == 8:
        ip = ".".join(str(int(ip[i:i + 2], 16)) for i in (6, 4, 2, 0))
    else:
        ip = {"0" * 32: "::", "0" * 24 + "01000000": "::1"}.get(ip, f"ip6:{ip}")
    return f"{ip}:{int(port, 16)}"


def host_of(addr: str) -> str:
    return addr.rsplit(":", 1)[0]


def held_by(pids) -> dict[str, int]:
    """{socket inode: pid} of the sockets these processes hold."""
    held = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    held[target[8:-1]] = pid
    return held


def own_listeners() -> list[str]:
    """'address:port' of every TCP socket this process listens on, asked of each socket
    itself (getsockname): no /proc/net/tcp, which is not read atomically and can miss a line
    while other sockets come and go."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if not os.readlink(f"/proc/self/fd/{fd}").startswith("socket:["):
                continue
            with socket.socket(fileno=os.dup(int(fd))) as sock:
                if (sock.type == socket.SOCK_STREAM and sock.family in (socket.AF_INET, socket.AF_INET6)
                        and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)):
                    host, port = sock.getsockname()[:2]
                    found.append(f"{host}:{port}")
    return found


class ListenerScan(threading.Thread):
    """Collects {address: pid} of what `root` and its descendants listen on, every 50 ms,
    until the block ends (one last scan then)."""

    def __init__(self, root: int, every_s: float = 0.05):
        super().__init__(daemon=True)
        self.root, self.every_s, self.seen = root, every_s, {}
        self.done = threading.Event()

    def scan_once(self):
        held = held_by(descendants(self.root))
        for inode, addr in listening().items():
            if inode in held:
                self.seen[addr] = held[inode]

    def run(self):
        while not self.done.wait(self.every_s):
            self.scan_once()

    def __enter__(self):
        self.scan_once()
        self.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.join()
