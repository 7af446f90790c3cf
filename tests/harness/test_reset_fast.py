"""Issue 52 item 6: `make reset` copies one file in about a second. It took 7-12 s (58 s on
a loaded machine) importing what a copy never uses: torch (through the `labs` package),
nbformat's schema check (jsonschema) and the Jupyter server (to list running servers)."""
import subprocess
import sys

from tests import course

HEAVY = ("torch", "jupyter_server", "nbformat", "jsonschema")


def test_the_reset_path_imports_nothing_heavy():
    probe = ("import sys\n"
             "from labs.harness.commands import copies, jupyter_open\n"
             "jupyter_open._servers(None)\n"
             f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=course.ROOT, check=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_labs_still_hands_out_the_launcher():
    from labs import HangError, WorkerError, launch
    assert launch.__module__ == "labs.harness.launch.launcher"
    assert issubclass(HangError, TimeoutError) and WorkerError.__name__ == "WorkerError"
