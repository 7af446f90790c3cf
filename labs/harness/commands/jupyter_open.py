"""What the running Jupyter servers hold of a notebook: an open JupyterLab tab, a kernel.

`make reset` asks before it replaces a learner's copy. Two questions, two sources:

* a kernel: the server's sessions API (GET /api/sessions: path, kernel, and how many
  clients are connected to the kernel). Closing a tab with its × leaves the kernel running;
  DELETE /api/sessions/<id> shuts it down.
* a tab: not in the sessions API (Kernel > Shut Down leaves the tab open with no session).
  JupyterLab keeps its layout in a workspace on the server (GET /lab/api/workspaces): every
  open document is an entry "<factory>:<path>" whose data names the path; a closed tab's
  entry is removed. A server without the workspaces API (not JupyterLab) is asked through
  its kernels instead: a kernel with a client connected counts as an open tab.

Servers are found with jupyter_server's own `list_running_servers` (the jpserver-*.json
files of Jupyter's runtime directory).
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

TIMEOUT = 5.0           # seconds per request: a local server answers at once


@dataclass
class Session:
    """A kernel session of the notebook: `connections` clients (tabs) talk to its kernel."""
    id: str
    kernel_id: str
    connections: int


@dataclass
class Holder:
    """One running server that holds the notebook: a tab open in JupyterLab, a kernel, or both."""
    url: str
    token: str
    path: str                       # the notebook's path on that server
    tab_open: bool
    sessions: list = field(default_factory=list)

    @property
    def kernel_running(self) -> bool:
        return bool(self.sessions)

    @property
    def page(self) -> str:
        """The URL that opens the notebook on that server, its token included: the one
        server already running (`make lab` again would start a second)."""
        query = f"?token={urllib.parse.quote(self.token)}" if self.token else ""
        return f"{self.url.rstrip('/')}/lab/tree/{urllib.parse.quote(self.path)}{query}"


def _servers(runtime_dir: str | None):
    """What jupyter_server's list_running_servers yields, without importing the server (tens
    of seconds on a loaded machine): each live server's jpserver-*.json."""
    try:
        from jupyter_core.paths import jupyter_runtime_dir
    except ImportError:             # no Jupyter installed: none is running
        return []
    found = []
    for file in sorted(Path(runtime_dir or jupyter_runtime_dir()).glob("jpserver-*.json")):
        try:
            info = json.loads(file.read_text(encoding="utf-8"))
            os.kill(int(info["pid"]), 0)        # its server still runs
        except PermissionError:                 # another user's, running
            pass
        except (OSError, ValueError, KeyError, TypeError):
            continue
        found.append(info)
    return found


def _request(info: dict, method: str, api_path: str):
    url = info["url"].rstrip("/") + api_path
    headers = {"Authorization": f"token {info['token']}"} if info.get("token") else {}
    req = urllib.request.Request(url, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=TIMEOUT) as answer:
        body = answer.read()
    return json.loads(body) if body else None


def _relative(notebook: Path, info: dict) -> str | None:
    """The notebook's path as that server names it, or None when it serves another folder."""
    root = Path(info.get("root_dir") or info.get("notebook_dir") or ".").resolve()
    try:
        return notebook.resolve().relative_to(root).as_posix()
    except ValueError:
        return None


def _open_in_workspaces(workspaces, path: str) -> bool:
    """Is `path` an open document in any of JupyterLab's workspaces?"""
    values = (workspaces or {}).get("workspaces", {}).get("values", [])
    for workspace in values:
        for key, value in (workspace.get("data") or {}).items():
            data = value.get("data") if isinstance(value, dict) else None
            if ":" in key and isinstance(data, dict) and data.get("path") == path:
                return True
    return False


def holders(notebook: Path, runtime_dir: str | None = None) -> list[Holder]:
    """Every running Jupyter server that has `notebook` open in a tab or in a kernel."""
    found = []
    for info in _servers(runtime_dir):
        path = _relative(notebook, info)
        if path is None or "url" not in info:
            continue
        try:
            sessions = [Session(s["id"], s["kernel"]["id"], int(s["kernel"].get("connections", 0)))
                        for s in _request(info, "GET", "/api/sessions")
                        if (s.get("path") or s.get("notebook", {}).get("path")) == path
                        and s.get("kernel")]
        except (OSError, ValueError, KeyError):
            continue                # a server that does not answer cannot save either
        try:
            tab_open = _open_in_workspaces(_request(info, "GET", "/lab/api/workspaces"), path)
        except urllib.error.HTTPError:          # not JupyterLab: a connected client is a tab
            tab_open = any(s.connections for s in sessions)
        except (OSError, ValueError):
            tab_open = any(s.connections for s in sessions)
        if tab_open or sessions:
            found.append(Holder(info["url"], info.get("token", ""), path, tab_open, sessions))
    return found


def shut_down(holder: Holder) -> None:
    """Shut down the notebook's kernels on that server (DELETE /api/sessions/<id>)."""
    for session in holder.sessions:
        _request({"url": holder.url, "token": holder.token}, "DELETE",
                 f"/api/sessions/{urllib.parse.quote(session.id)}")
