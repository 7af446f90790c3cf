"""The fork server removes its parent's temporary folder when it ends: nothing is left behind.

multiprocessing keeps the fork server's socket in a folder of the launching process
(`multiprocessing.util.get_temp_dir()`, /tmp/pymp-...), and removes it when that process
exits normally. A Jupyter kernel does not: it ends without running Python's exit handlers
(measured with ipykernel 7.4: an atexit callback registered in the kernel does not run), and
first stops its children with SIGTERM. So the fork server, which lives exactly as long as
the kernel, removes the folder as it ends: on SIGTERM, or when its parent is gone (it then
exits normally). The course's own temporary files of a kernel's session live in that folder
too (`session_folder`).
"""
from __future__ import annotations

import atexit
import multiprocessing.util
import os
import shutil
import signal
import tempfile
from contextlib import contextmanager

FOLDER_ENV = "P2P_FORK_SERVER_CLEANS"      # "<parent pid>:<folder>", for the fork server only


def session_folder(prefix: str) -> str:
    """A new folder inside this process's multiprocessing folder: removed with it, when this
    process exits or (a kernel) when its fork server ends."""
    return tempfile.mkdtemp(prefix=prefix, dir=multiprocessing.util.get_temp_dir())


@contextmanager
def handed_to_the_fork_server():
    """Around starting the fork server: it inherits this environment, and only it may."""
    os.environ[FOLDER_ENV] = f"{os.getpid()}:{multiprocessing.util.get_temp_dir()}"
    try:
        yield
    finally:
        os.environ.pop(FOLDER_ENV, None)


def take_over() -> None:
    """In the fork server (it imports the launcher at start): remove the parent's folder when
    this process ends. Elsewhere, nothing."""
    pid, _, folder = os.environ.pop(FOLDER_ENV, "").partition(":")
    if not folder or not pid.isdigit() or int(pid) != os.getppid():
        return
    server = os.getpid()

    def remove():
        if os.getpid() == server:           # not in a worker forked from the server
            shutil.rmtree(folder, ignore_errors=True)

    def on_sigterm(signum, frame):
        remove()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    atexit.register(remove)                 # the parent is gone: the server exits normally
    signal.signal(signal.SIGTERM, on_sigterm)
