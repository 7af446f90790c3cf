"""The browser tests' shared fixtures: Chromium, a real JupyterLab server, a browser.

Each test module gets its own server (module scope): what one module leaves open in
JupyterLab (tabs, kernels, workspaces) never meets another's.
"""
from __future__ import annotations

import os
import shutil

import pytest

from tests.browser.lab_server import LabServer, assert_all_gone
from tests.procs import descendants

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def chromium() -> str:
    exe = os.environ.get("CHROMIUM")
    if exe:
        # Asked for explicitly: a wrong path is a mistake to report, not a reason to skip.
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            pytest.fail(f"CHROMIUM={exe!r} is not an executable file")
        return exe
    exe = shutil.which("chromium")
    if not exe:
        pytest.skip("no chromium found for the JupyterLab browser test: install Debian's "
                    "`chromium` (tests/browser/install_chromium.sh, run by `make test` as "
                    "root) or set CHROMIUM=/path/to/chromium")
    return exe


@pytest.fixture(scope="module")
def lab(chromium, tmp_path_factory):
    server = LabServer(tmp_path_factory.mktemp("jupyterlab"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser(chromium, lab):
    from playwright.sync_api import sync_playwright

    before = set(descendants(os.getpid()))
    pw = sync_playwright().start()
    seen: dict[int, str] = {}
    try:
        b = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield b
        finally:
            lab.track()     # the server's tree is the server's to account for
            seen = {p: s for p, s in descendants(os.getpid()).items()
                    if p not in before and p not in lab.tracked}
            b.close()
    finally:
        pw.stop()
        # Chromium and Playwright's driver: descendants of this process that the server
        # did not start (the server's own tree is checked when it stops).
        assert_all_gone(seen, "Chromium / Playwright")
