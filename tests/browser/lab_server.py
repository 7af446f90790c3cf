"""A real JupyterLab server for the browser test, and proof that everything it started is gone.

The server runs this Python with temporary settings, workspaces and runtime dirs, a fixed
token, on 127.0.0.1 and a free port, with the exercises as a learner has them (none
solved). It serves a temporary folder (copies of the notebooks), never the repository.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.procs import descendants, die_with, read, still_alive

TOKEN = "p2p-course-browser-test"
SERVER_START_TIMEOUT = 60.0


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")[:160]
    except OSError:
        return "?"


def assert_all_gone(tracked: dict[int, str], what: str, wait: float = 10.0) -> None:
    deadline = time.monotonic() + wait
    while still_alive(tracked) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = still_alive(tracked)
    if left:
        described = [f"{p} ({_cmdline(p)})" for p in left]
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        pytest.fail(f"{what} left processes behind (now killed): {described}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    def __init__(self, base: Path):
        self.base = base
        self.root = base / "served"         # what the server serves: copies of notebooks
        self.root.mkdir()
        self.proc = None
        self.url = None
        self.log_path = base / "jupyterlab.log"
        self.tracked: dict[int, str] = {}   # every process the server started, ever seen

    def env(self) -> dict:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTEST_", "JUPYTER", "IPYTHON")) and k != "MPLBACKEND"}
        for name in ("runtime", "config", "data", "ipython"):
            (self.base / name).mkdir(exist_ok=True)
        env.update(
            P2P_COURSE_SOLUTIONS="0",          # as a learner has it: no exercise solved
            JUPYTER_RUNTIME_DIR=str(self.base / "runtime"),
            JUPYTER_CONFIG_DIR=str(self.base / "config"),
            JUPYTER_DATA_DIR=str(self.base / "data"),
            IPYTHONDIR=str(self.base / "ipython"),
            PYDEVD_DISABLE_FILE_VALIDATION="1",
        )
        return env

    def write_settings(self) -> Path:
        settings = self.base / "settings"
        news = settings / "@jupyterlab" / "apputils-extension"
        news.mkdir(parents=True)
        # No news/update check toasts (and no requests to the internet).
        (news / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        # No autosave: the test saves when it reads the notebook back (File > Save). An
        # autosave landing just before that save made JupyterLab see the file "changed on
        # disk" and put up a modal dialog over the widgets the test then clicks.
        docs = settings / "@jupyterlab" / "docmanager-extension"
        docs.mkdir(parents=True)
        (docs / "plugin.jupyterlab-settings").write_text(json.dumps({"autosave": False}))
        return settings

    def start(self) -> None:
        settings, workspaces = self.write_settings(), self.base / "workspaces"
        workspaces.mkdir()
        for _ in range(3):
            port = _free_port()
            cmd = [sys.executable, "-m", "jupyterlab", "--no-browser",
                   "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
                   f"--IdentityProvider.token={TOKEN}",
                   f"--ServerApp.root_dir={self.root}",
                   f"--LabApp.user_settings_dir={settings}",
                   f"--LabApp.workspaces_dir={workspaces}",
                   "--LabApp.news_url=None",
                   "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
            if os.geteuid() == 0:
                cmd.append("--allow-root")     # containers and CI often run as root
            log = open(self.log_path, "ab")
            self.proc = subprocess.Popen(cmd, cwd=self.root, env=self.env(), stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, preexec_fn=die_with(os.getpid()))
            log.close()
            self.url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + SERVER_START_TIMEOUT
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    self.api("GET", "/api/status")
                    return
                except (urllib.error.URLError, ConnectionError, OSError):
                    time.sleep(0.2)
            if self.proc.poll() is None or "already in use" not in self.log():
                break       # not a port taken between our check and its bind: no retry
        self.stop()
        raise AssertionError(f"JupyterLab did not start; its log:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""

    def api(self, method: str, path: str, timeout: float = 10.0):
        req = urllib.request.Request(self.url + path, method=method,
                                     headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def track(self) -> None:
        """Remember every living process the server started (kernels, fork servers,
        workers): kernels run in sessions of their own, so its process group is not
        enough to find them later."""
        if self.proc is not None and self.proc.poll() is None:
            self.tracked[self.proc.pid] = getattr(read(self.proc.pid), "start", "")
            self.tracked.update(descendants(self.proc.pid))

    def shutdown_kernel(self, path: str) -> None:
        self.track()
        for session in self.api("GET", "/api/sessions"):
            if session.get("path") == path:
                self.api("DELETE", f"/api/sessions/{session['id']}", timeout=30)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.track()
        if self.proc.poll() is None:
            try:
                for session in self.api("GET", "/api/sessions"):
                    self.api("DELETE", f"/api/sessions/{session['id']}", timeout=30)
                for kernel in self.api("GET", "/api/kernels"):
                    self.api("DELETE", f"/api/kernels/{kernel['id']}", timeout=30)
                self.api("POST", "/api/shutdown")
                self.proc.wait(timeout=15)
            except (urllib.error.URLError, OSError, subprocess.TimeoutExpired, ValueError):
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)   # the server and anything in its group
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait(timeout=10)
        assert_all_gone(self.tracked, "JupyterLab (server, kernels, workers)")
