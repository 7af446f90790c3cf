"""The reader's real path: the notebooks in JupyterLab, in a real (headless) browser.

nbval proves that every cell's output is right; it never renders anything. This test
starts a real JupyterLab server (temporary settings, workspaces and runtime dirs, a
fixed token, 127.0.0.1, a free port, this Python, the reference solutions on), opens
each lesson notebook that shows a widget (found from its committed outputs) through the
UI in headless Chromium driven by Playwright (one page per notebook, all running at
once), clicks Run > Run All Cells, and checks what a reader sees:

  * every code cell ran and none failed: no output of type error, no traceback except
    in a cell that catches the exception and prints it on purpose (File > Save, then
    the saved notebook is read back);
  * the ipywidgets controls render as widgets (not "Loading widget..." or "Error
    displaying widget"): in every cell that has one in the committed notebook, with
    the controls the lesson describes (EXPECT);
  * changing a control / clicking Run starts real workers again and updates the output;
  * matplotlib figures appear as images, in every cell that has one when committed.

The notebooks are copied (outputs stripped) into a temporary directory that the server
serves, so the committed notebooks are never touched. Screenshots go to test-artifacts/.
Nothing is left running: kernels are shut down through the server's API, the server's
process group is killed, and the OS is asked whether any process we started survived.

Chromium: Debian's `chromium` (tests/browser/install_chromium.sh), or set CHROMIUM to an
executable. Without one, the test is skipped with that message.
P2P_COURSE_BROWSER_NOTEBOOKS="a.ipynb,b.ipynb" runs other notebooks (paths).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest

from tests import course
from tests.procs import descendants, die_with as _die_with, read, still_alive

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
TOKEN = "p2p-course-browser-test"
# Every lesson whose committed outputs show a widget (found from the notebook files).
NOTEBOOKS = [str(p.relative_to(ROOT)) for p in course.widget_notebooks()]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
SERVER_START_TIMEOUT = 60.0
# A notebook runs in < 60 s alone; here they all run at once, on a machine that may be loaded.
RUN_ALL_SECONDS_EACH = 45.0
WIDGET_TIMEOUT = 60.0          # one click on Run: a launch or a deliberate hang demo

pytestmark = pytest.mark.slow




def _notebooks() -> list[str]:
    chosen = os.environ.get("P2P_COURSE_BROWSER_NOTEBOOKS", "").strip()
    return [p.strip() for p in chosen.split(",") if p.strip()] if chosen else NOTEBOOKS


# ----------------------------------------------------------------------------------------
# Processes: what we started, and proof that it is gone
# ----------------------------------------------------------------------------------------

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


# ----------------------------------------------------------------------------------------
# The JupyterLab server
# ----------------------------------------------------------------------------------------

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
            P2P_COURSE_SOLUTIONS="1",          # notebooks run the reference solutions
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
                                         start_new_session=True, preexec_fn=_die_with(os.getpid()))
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


# ----------------------------------------------------------------------------------------
# Fixtures
# ----------------------------------------------------------------------------------------

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


# ----------------------------------------------------------------------------------------
# Driving JupyterLab
# ----------------------------------------------------------------------------------------

PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"

# Per code cell: its prompt ("[3]:", "[*]:", "[ ]:"), its images, its rendered widgets.
CELL_STATE_JS = """(panel) => {
  const cells = [...document.querySelectorAll(panel + ' .jp-Notebook .jp-Cell.jp-CodeCell')];
  return cells.map((c) => {
    const prompt = c.querySelector('.jp-InputArea-prompt');
    const imgs = [...c.querySelectorAll('.jp-OutputArea-output img')].map((i) => ({
      w: i.naturalWidth, h: i.naturalHeight, complete: i.complete}));
    return {prompt: prompt ? prompt.textContent.trim() : '', images: imgs,
            widgets: c.querySelectorAll('.jp-OutputArea-output .jupyter-widgets').length};
  });
}"""


def cell_states(page):
    return page.evaluate(CELL_STATE_JS, PANEL)


def kernel_idle(page) -> bool:
    """The notebook has its kernel (not "No Kernel") and the kernel is idle."""
    return page.evaluate("""(panel) => {
      const name = document.querySelector(panel + ' [data-jp-item-name="kernelName"]');
      const ind = document.querySelector(panel + ' .jp-Notebook-ExecutionIndicator');
      return !!name && !!ind && !/No Kernel/.test(name.textContent)
             && ind.getAttribute('data-status') === 'idle';
    }""", PANEL)


def run_menu_command(page, menu: str, item: str) -> None:
    """Click a top menu, then one of its items by its label (as a reader does)."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(rf"^{re.escape(menu)}$")).first.click()
    entry = page.locator(".lm-Menu-content > .lm-Menu-item").filter(
        has=page.locator(".lm-Menu-itemLabel", has_text=re.compile(rf"^{item}$"))).first
    entry.wait_for(state="visible", timeout=10_000)
    entry.click()


def wait_until(predicate, timeout: float, what: str, interval: float = 0.25):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def stripped_copy(src: Path, dst: Path) -> nbformat.NotebookNode:
    """The notebook as a reader gets it, minus stored outputs and widget state, so every
    output the test sees was produced by this run."""
    nb = nbformat.read(src, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, dst)
    return nb


def saved_errors(path: Path) -> list[str]:
    """Errors in the notebook as JupyterLab saved it after the run. A cell that catches an
    exception on purpose prints text (e.g. `exc.brief()`); that is not an error here."""
    nb = nbformat.read(path, as_version=4)
    problems = []
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        catches = "except" in cell.source
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                problems.append(f"code cell {i + 1} raised {out.ename}: {out.evalue}")
                continue
            text = out.get("text", "") if out.output_type == "stream" else \
                json.dumps(out.get("data", {}))
            if "Traceback" in text and (out.get("name") == "stderr" or not catches):
                problems.append(f"code cell {i + 1} shows a traceback "
                                f"({out.get('name', out.output_type)}): {text[:600]}")
        if cell.execution_count is None:
            problems.append(f"code cell {i + 1} was not executed")
    return problems


def _saved_since(path: Path, mtime: float) -> bool:
    """JupyterLab wrote the file after `mtime`, and it parses."""
    try:
        if path.stat().st_mtime_ns <= mtime:
            return False
        nbformat.read(path, as_version=4)
        return True
    except Exception:  # noqa: BLE001 - being written right now
        return False


# What each course notebook must show beyond what its committed outputs say: widget
# controls as (kind, label) with kind dropdown / slider / button / output, and whether a
# matplotlib figure is part of the lesson. Any other notebook needs at least one control.
EXPECT = {
    "00_welcome.ipynb": {"widgets": [("slider", "world size"), ("button", "Run"),
                                     ("output", "")], "figure": False},
    "04_deadlock_hazards.ipynb": {"widgets": [("dropdown", "pattern"),
                                              ("slider", "world size"), ("slider", "numel"),
                                              ("button", "Run"), ("output", "")],
                                  "figure": True},
}
WIDGET_MIME = course.WIDGET_MIME


def committed_kinds(nb) -> list[set]:
    """Per code cell of the committed notebook: {'image', 'widget'} where its stored
    outputs have a figure / a widget view (the browser must show the same)."""
    kinds = []
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        mimes = {m for out in cell.get("outputs", []) for m in out.get("data", {})}
        kinds.append({k for k, m in (("image", "image/png"), ("widget", WIDGET_MIME))
                      if m in mimes})
    return kinds


WIDGETS_JS = """(panel) => {
  const root = document.querySelector(panel);
  const label = (el) => ((el.querySelector(':scope > .widget-label') || {}).textContent || '').trim();
  return {
    dropdown: [...root.querySelectorAll('.jp-OutputArea-output .widget-dropdown')].map(label),
    slider: [...root.querySelectorAll('.jp-OutputArea-output .widget-slider')].map(label),
    button: [...root.querySelectorAll('.jp-OutputArea-output button.jupyter-button')]
              .map((b) => b.textContent.trim()),
    output: [...root.querySelectorAll('.jp-OutputArea-output .widget-output')].map(() => ''),
    broken: [...root.querySelectorAll('.jp-OutputArea-output')]
              .map((o) => o.innerText || '')
              .filter((t) => /Loading widget|Error displaying widget/.test(t))
              .map((t) => t.slice(0, 300)),
  };
}"""


def rendered_widgets(page) -> dict:
    return page.evaluate(WIDGETS_JS, PANEL)


# ----------------------------------------------------------------------------------------
# The test
# ----------------------------------------------------------------------------------------

class NotebookRun:
    """One notebook opened in its own browser page, run with Run > Run All Cells."""

    def __init__(self, lab, notebook: str):
        self.lab = lab
        self.src = (ROOT / notebook) if not os.path.isabs(notebook) else Path(notebook)
        self.name = self.src.name
        self.shot = ARTIFACTS / f"jupyterlab-{self.src.stem}"
        self.error = None               # what went wrong while opening / running, if anything
        self.page = self.context = None
        self.page_errors: list[str] = []
        self.states = self.seconds = self.t0 = None
        self.committed, self.n_code = [], 0
        self.closed = False
        self._quiet = 0

    def open(self, browser):
        """Copy the notebook (outputs stripped) where the server serves it; a fresh page."""
        assert self.src.is_file(), f"{self.src} does not exist"
        self.committed = committed_kinds(nbformat.read(self.src, as_version=4))
        copy = stripped_copy(self.src, self.lab.root / self.name)
        self.n_code = sum(c.cell_type == "code" for c in copy.cells)
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)
        self.page.on("pageerror", lambda exc: self.page_errors.append(str(exc)))

    def load(self):
        """Ask for the notebook's page (JupyterLab then opens it and starts its kernel)."""
        self.t0 = time.monotonic()
        self.page.goto(f"{self.lab.url}/lab/tree/{self.name}?reset&token={TOKEN}")

    def start(self):
        """Wait for the notebook and its kernel, then click Run > Run All Cells."""
        self.page.locator(f"{PANEL} .jp-Notebook .jp-CodeCell").first.wait_for(timeout=60_000)
        wait_until(lambda: kernel_idle(self.page), 60, f"the kernel of {self.name} to start")
        run_menu_command(self.page, "Run", "Run All Cells")

    def finished(self):
        """The run is over: the kernel is idle and no cell is running or queued ([*]),
        twice in a row. (Run All stops at a cell that raises: the cells after it stay
        unnumbered, and the checks report them.)"""
        states = cell_states(self.page)
        over = (len(states) == self.n_code and kernel_idle(self.page)
                and not any("*" in s["prompt"] for s in states)
                and any(re.fullmatch(r"\[\d+\]:", s["prompt"]) for s in states))
        self._quiet = self._quiet + 1 if over else 0
        if self._quiet >= 2:
            self.states, self.seconds = states, time.monotonic() - self.t0
            return True
        return False

    def close(self):
        if self.closed:
            return
        self.closed = True
        try:
            self.lab.shutdown_kernel(self.name)
        finally:
            if self.context is not None:
                self.context.close()


@pytest.fixture(scope="module")
def runs(lab, browser):
    """Every notebook open in its own page, all running at once: the deadlock lessons
    mostly wait for timeouts, so running them side by side saves most of that time."""
    ARTIFACTS.mkdir(exist_ok=True)
    opened = {}
    try:
        for notebook in _notebooks():
            opened[notebook] = run = NotebookRun(lab, notebook)
            try:
                run.open(browser)
                run.load()
            except Exception as exc:  # noqa: BLE001 - reported by that notebook's test
                run.error = exc
        for run in opened.values():
            try:
                if run.error is None:
                    run.start()
            except Exception as exc:  # noqa: BLE001
                run.error = exc
        timeout = max(150.0, RUN_ALL_SECONDS_EACH * len(opened))
        deadline = time.monotonic() + timeout
        pending = [r for r in opened.values() if r.error is None]
        while pending and time.monotonic() < deadline:
            for run in list(pending):
                try:
                    if run.finished():
                        pending.remove(run)
                except Exception as exc:  # noqa: BLE001
                    run.error = exc
                    pending.remove(run)
            time.sleep(0.25)
        for run in pending:
            run.error = AssertionError(f"timed out after {timeout:g} s waiting for "
                                       f"all {run.n_code} code cells of {run.name} to run")
        yield opened
    finally:
        for run in opened.values():
            run.close()


@pytest.mark.parametrize("notebook", _notebooks())
def test_notebook_in_jupyterlab(notebook, runs, lab):
    run = runs[notebook]
    name, page, shot, committed = run.name, run.page, run.shot, run.committed
    expect = EXPECT.get(name, {"widgets": [], "figure": False})
    try:
        # 1. Run > Run All Cells (done in the fixture, all notebooks at once).
        if run.error is not None:
            raise run.error
        page.screenshot(path=f"{shot}.png")

        # 2. No errors, in the notebook as JupyterLab saves it (File > Save).
        saved = lab.root / name
        before = saved.stat().st_mtime_ns
        run_menu_command(page, "File", "Save( Notebook)?")
        wait_until(lambda: _saved_since(saved, before), 30, f"{name} to be saved")
        problems = saved_errors(saved)
        assert not problems, f"{name} ran with errors:\n" + "\n".join(problems)

        # 3. The widgets render as widgets (views appear asynchronously after the output),
        #    in every cell whose committed output is a widget, and with the controls the
        #    lesson describes.
        def widgets_ready():
            w, states_now = rendered_widgets(page), cell_states(page)
            controls = w["dropdown"] + w["slider"] + w["button"]
            missing = [f"{kind} {label!r}" for kind, label in expect["widgets"]
                       if label not in w[kind] and not (kind == "output" and w[kind])]
            missing += [f"a widget in code cell {i + 1}" for i, k in enumerate(committed)
                        if "widget" in k and not states_now[i]["widgets"]]
            return (controls and not missing and not w["broken"]) and w
        try:
            found = wait_until(widgets_ready, 30, f"the ipywidgets of {name} to render")
        except AssertionError:
            raise AssertionError(
                f"{name}: widgets did not render as expected; expected "
                f"{expect['widgets'] or 'at least one control'} (and one in each cell "
                f"that has one in the committed notebook), found {rendered_widgets(page)}"
            ) from None

        # 4. Matplotlib figures: an <img> in an output, loaded, in every cell whose
        #    committed output has one (and at least one where the lesson has figures).
        def figures():
            states_now = cell_states(page)
            drawn = [any(im["complete"] and im["w"] > 0 for im in s["images"])
                     for s in states_now]
            missing = [i + 1 for i, k in enumerate(committed) if "image" in k and not drawn[i]]
            return not missing and (any(drawn) or not expect["figure"])
        wait_until(figures, 15, f"the matplotlib figures (an <img> in an output) of {name}")
        imgs = page.locator(f"{PANEL} .jp-OutputArea-output img")
        if imgs.count():
            imgs.first.scroll_into_view_if_needed()
            page.screenshot(path=f"{shot}-figure.png")

        # 5. Turning the knobs re-runs real workers and updates the output area.
        exercised = exercise_widgets(page, name)
        page.screenshot(path=f"{shot}-widgets.png")
        assert not run.page_errors, f"{name}: JavaScript errors in the page: {run.page_errors}"
        print(f"{name}: {run.n_code} code cells ran in {run.seconds:.1f} s; widgets "
              f"{ {k: v for k, v in found.items() if k != 'broken'} }; "
              f"exercised: {exercised}; screenshots {shot.relative_to(ROOT)}*.png")
    except BaseException:
        try:
            if page is not None:
                page.screenshot(path=f"{shot}-failed.png")
        except Exception:  # noqa: BLE001 - the screenshot is a bonus
            pass
        raise
    finally:
        run.close()     # its kernel down now: the next notebook's checks get the CPU


# ----------------------------------------------------------------------------------------
# Turning the knobs
# ----------------------------------------------------------------------------------------

# A rendered widget at the top level of a cell output (not the controls nested in it).
WIDGET_ROOT = ".jp-OutputArea-output > .jupyter-widgets"


def _output_text(box) -> str:
    """The text of the Output area(s) inside one rendered widget (or of the whole box)."""
    outs = box.locator(".widget-output")
    if outs.count():
        return "\n".join(outs.nth(i).inner_text() for i in range(outs.count()))
    return box.inner_text()


def _label(control) -> str:
    label = control.locator(":scope > .widget-label")
    return label.first.inner_text().strip() if label.count() else ""


def exercise_widgets(page, name: str, rounds: int = 2) -> list[str]:
    """For every rendered widget with a Run button, a dropdown or a slider: `rounds` times,
    change one control (dropdown first, then the world-size slider) and click Run if
    there is one; each time its output must change to fresh results from real workers
    (text that names ranks or workers) without a traceback. Returns what was done."""
    boxes = page.locator(f"{PANEL} {WIDGET_ROOT}")
    done = []
    for i in range(boxes.count()):
        box = boxes.nth(i)
        dropdowns = box.locator(".widget-dropdown")
        sliders = box.locator(".widget-slider")
        buttons = box.locator("button.jupyter-button", has_text=re.compile(r"^\s*Run\s*$"))
        if not (dropdowns.count() or sliders.count() or buttons.count()):
            continue
        box.scroll_into_view_if_needed()
        knobs = ([("dropdown", dropdowns.first)] if dropdowns.count() else []) + sorted(
            [("slider", sliders.nth(j)) for j in range(sliders.count())],
            key=lambda k: "world" not in _label(k[1]).lower())
        for round_ in range(rounds):
            before = _output_text(box)
            action = []
            if knobs:
                kind, knob = knobs[round_ % len(knobs)]
                action.append(pick_other_option(knob) if kind == "dropdown"
                              else nudge_slider(knob))
            if buttons.count():
                buttons.first.click()
                action.append("click Run")
            what = f"{name}, widget {i + 1}: its output to change after {', '.join(action)}"

            last = [None]

            def updated():
                # New text naming ranks or workers, the kernel idle, and the same text
                # twice in a row (the handler has finished printing).
                text = _output_text(box)
                settled, last[0] = text == last[0], text
                return (settled and text != before and kernel_idle(page)
                        and re.search(r"\brank|\bworkers?\b", text)) and text
            try:
                after = wait_until(updated, WIDGET_TIMEOUT, what, interval=0.3)
            except AssertionError:
                raise AssertionError(f"{what}: timed out; output before:\n{before}\n"
                                     f"now:\n{_output_text(box)}") from None
            assert "Traceback" not in after, f"{what}: it shows a traceback:\n{after}"
            done.append(", ".join(action))
    assert done, f"{name}: no widget control (Run button, dropdown, slider) to exercise"
    return done


def pick_other_option(dropdown) -> str:
    select = dropdown.locator("select")
    options = select.locator("option").all_inner_texts()
    current = select.evaluate("(s) => s.options[s.selectedIndex].text")
    others = [o for o in options if o != current]
    assert others, f"dropdown {_label(dropdown)!r} has a single option {options}"
    select.select_option(label=others[0])
    return f"dropdown {_label(dropdown)!r} -> {others[0].replace(chr(0xa0), ' ')!r}"


def nudge_slider(slider) -> str:
    """Move an ipywidgets slider one step with the keyboard, as a reader can: down
    (fewer ranks, a faster run), or up when it is at its minimum."""
    handle = slider.locator(".noUi-handle").first
    readout = slider.locator(".widget-readout").first
    before = readout.inner_text().strip()
    handle.focus()
    handle.press("ArrowLeft")
    if readout.inner_text().strip() == before:
        handle.press("ArrowRight")
    return f"slider {_label(slider)!r} {before} -> {readout.inner_text().strip()}"
