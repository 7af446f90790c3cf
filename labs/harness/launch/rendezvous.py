"""A launch's rendezvous, reachable from this machine only.

torch's TCPStore server listens on every interface, whatever host name it is given
(`TCPStore("127.0.0.1", 0, is_master=True)` listens on `*:port`). So the parent opens the
listening socket itself, on 127.0.0.1, and hands it to the store (`master_listen_fd`).
The workers' gloo listeners follow the address their host name resolves to, which on a
laptop is often its network address: each worker points gloo at the loopback interface
instead (GLOO_SOCKET_IFNAME, unless you set it yourself).

    store = open_store(world_size, timeout_s)      # parent: store.port is for the workers
    store = join_store(port, world_size, timeout_s)  # worker, before init_process_group
"""
from __future__ import annotations

import datetime
import os
import socket

import torch.distributed as dist

LOOPBACK = "127.0.0.1"
_IFF_LOOPBACK = 0x8          # the flag Linux sets on a loopback interface (<net/if.h>)


def open_store(world_size: int, timeout_s: float) -> dist.TCPStore:
    """The store's server, listening on 127.0.0.1 only, on a port the OS picks."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind((LOOPBACK, 0))
        listener.listen(socket.SOMAXCONN)
        port = listener.getsockname()[1]
    except OSError:
        listener.close()
        raise
    # The store owns the socket from here (it closes it when it is destroyed).
    return dist.TCPStore(LOOPBACK, port, world_size, is_master=True, wait_for_workers=False,
                         master_listen_fd=listener.detach(),
                         timeout=datetime.timedelta(seconds=timeout_s))


def join_store(port: int, world_size: int, timeout_s: float) -> dist.TCPStore:
    """A worker's client of the store; gloo will listen on the loopback interface."""
    interface = loopback_interface()
    if interface is not None:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", interface)
    return dist.TCPStore(LOOPBACK, port, world_size, is_master=False,
                         timeout=datetime.timedelta(seconds=timeout_s))


def loopback_interface() -> str | None:
    """The loopback interface's name ("lo" on Linux, "lo0" on macOS), None if not found."""
    names = [name for _, name in socket.if_nameindex()]
    for name in names:          # Linux says which one is loopback
        try:
            with open(f"/sys/class/net/{name}/flags") as f:
                if int(f.read(), 16) & _IFF_LOOPBACK:
                    return name
        except (OSError, ValueError):
            break
    return next((name for name in names if name in ("lo", "lo0")), None)
