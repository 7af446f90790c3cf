"""Launch errors read like a good compiler's: each cause once, the reader's frame first,
no harness frames; an interrupt says where each rank was; an unsolved exercise in a
notebook cell shows the reference result, marked as such."""
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback

import pytest
import torch
import torch.distributed as dist

from labs import HangError, Interrupted, WorkerError, launch, launch_exercise, last_worker_pids
from labs.harness.launch import supervise
from labs.harness.launch.errors import LaunchError
from labs.harness.notebook.plots import timeline_figure
from labs.ring import run_variant
from tests.procs import descendants

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def everyone_fails(rank, world_size):
    raise ValueError("the same mistake everywhere")


def two_causes(rank, world_size):
    if rank % 2:
        raise KeyError("odd")
    raise ValueError("even")


def blocked_sends(rank, world_size):
    dist.send(torch.ones(10), dst=1 - rank)


def test_one_cause_is_written_once_with_the_ranks_that_share_it(no_leftover_workers):
    with pytest.raises(WorkerError) as info:
        launch(everyone_fails, 4, timeout=20, quiet=True)
    text = str(info.value)
    assert text.startswith("ranks 0, 1, 2, 3 raised ValueError: the same mistake everywhere")
    assert text.count("raised") == 1
    # the reader's frame first, with its line; no harness frame anywhere
    assert text.splitlines()[1].startswith("  tests/harness/test_errors.py:")
    assert "in everyone_fails" in text.splitlines()[1]
    assert "labs/harness" not in text and "Traceback" not in text
    assert sorted(info.value.tracebacks) == [0, 1, 2, 3]       # details one attribute away
    assert "labs/harness/launch/worker.py" in info.value.tracebacks[0]


def test_distinct_causes_are_listed_separately(no_leftover_workers):
    with pytest.raises(WorkerError) as info:
        launch(two_causes, 4, timeout=20, quiet=True)
    text = str(info.value)
    assert "ranks 0, 2 raised ValueError: even" in text
    assert "ranks 1, 3 raised KeyError: 'odd'" in text


def test_ipython_shows_the_message_not_the_launcher(no_leftover_workers):
    with pytest.raises(WorkerError) as info:
        launch(everyone_fails, 2, timeout=20, quiet=True)
    shown = "\n".join(info.value._render_traceback_())
    assert "WorkerError" in shown and "the same mistake everywhere" in shown
    assert "launcher.py" not in shown and "supervise.py" not in shown


def blocked_sends_after_start(rank, world_size, folder):
    open(os.path.join(folder, f"{rank}.started"), "w").close()
    blocked_sends(rank, world_size)


@pytest.fixture(autouse=True)
def _sigint_raises_keyboard_interrupt():
    """What a kernel (or a terminal) has: SIGINT raises KeyboardInterrupt. A test process
    started in the background by a non-interactive shell inherits SIGINT ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(autouse=True)
def _patient_status(monkeypatch):
    """An interrupt waits 0.5 s for the ranks to say where they are (you want your prompt
    back); on a machine loaded by a full suite a rank may answer later. These tests check
    the answers, so they wait for them (a rank that answers ends the wait at once)."""
    monkeypatch.setattr(supervise, "STATUS_WAIT_INTERRUPTED", 10.0)


def _when_started(folder, world_size, then, done: threading.Event):
    """Once every rank has started its function (and a moment more), call `then`: no
    guess of how long starting takes on a loaded machine (a first launch starts the fork
    server, which imports torch). If they never start, do nothing: the launch's own
    timeout ends the test with its error."""
    while len(os.listdir(folder)) < world_size:
        if done.wait(0.05):         # the launch ended first
            return
    time.sleep(1.0)                 # each rank is inside the gloo call right after its file
    then()


def test_an_interrupt_says_where_each_rank_was_and_stops_them(tmp_path, no_leftover_workers):
    done = threading.Event()
    interrupt = threading.Thread(target=_when_started, args=(
        str(tmp_path), 2, lambda: os.kill(os.getpid(), signal.SIGINT), done))
    interrupt.start()
    try:
        with pytest.raises(Interrupted) as info:
            launch(blocked_sends_after_start, 2, args=(str(tmp_path),), timeout=60, quiet=True)
    finally:
        done.set()
        interrupt.join()
    assert isinstance(info.value, KeyboardInterrupt)
    text = str(info.value)
    assert text.startswith("you stopped the launch, and its 2 workers with it.")
    shown = "\n".join(info.value._render_traceback_())
    assert "Interrupted" in shown and "interrupted: " not in shown   # said once
    assert "rank 0: blocked" in text and "in send(to 1, tag 0, 10 x float32)" in text


def test_unsolved_exercise_shows_the_reference_result_marked(capsys, no_leftover_workers):
    reference = launch(run_variant, 2, args=("ring", (6,)), quiet=True,
                       env={"P2P_COURSE_SOLUTIONS": "1"})
    got = launch_exercise(run_variant, 2, args=("ring", (6,)),
                          env={"P2P_COURSE_SOLUTIONS": "0"})
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Exercise `ring_all_reduce` (labs/ring.py) is not solved yet")
    assert "REFERENCE" in out[0] and "make check" in out[1]
    assert all(torch.equal(a, b) for a, b in zip(got, reference))


def test_a_hang_is_still_a_hang_error(no_leftover_workers):
    with pytest.raises(HangError, match=r"rank 0: blocked [\d.]+ s in send\(to 1"):
        launch(blocked_sends, 2, timeout=3, pg_timeout=1.5, quiet=True)


def test_a_stand_in_is_per_exercise(monkeypatch):
    """launch_exercise swaps in the reference of the unsolved exercise only: P2P_COURSE_SOLUTIONS
    names it, and every other exercise keeps running the learner's body."""
    from labs.harness.ranks.exercises import solution_wanted
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "ring_reduce_scatter")
    assert solution_wanted("ring_reduce_scatter") and not solution_wanted("ring_all_reduce")
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "1")
    assert solution_wanted("ring_all_reduce")
    monkeypatch.setenv("P2P_COURSE_SOLUTIONS", "0")
    assert not solution_wanted("ring_reduce_scatter")


# -- a launch that cannot start: one short error, before any worker exists -------------------

def returns_rank(rank, world_size, *args):
    return rank


class Settings:          # pretend it was defined in the notebook (module __main__)
    pass


Settings.__module__ = "__main__"


def _nested():
    def inner(rank, world_size):
        return rank
    return inner


@pytest.mark.parametrize("call, says", [
    (lambda: launch(lambda rank, world_size: rank, 2), "lambda or a nested function"),
    (lambda: launch(_nested(), 2), "lambda or a nested function"),
    (lambda: launch(returns_rank, 0), "world_size must be between 1 and 32, got 0"),
    (lambda: launch(returns_rank, "4"), "got '4' (a str). Write world_size=4."),
    (lambda: launch(returns_rank, 2, args=(threading.Lock(),)), "args[0] (lock) cannot be sent"),
    (lambda: launch(returns_rank, 2, args=([Settings()],)), "Settings is defined in the notebook"),
    (lambda: launch(returns_rank, 2, timeout=0), "timeout must be a positive number"),
], ids=["lambda", "nested", "world_size 0", "world_size '4'", "lock", "notebook class", "timeout"])
def test_a_launch_that_cannot_start_says_what_to_do_in_one_short_error(call, says):
    before = set(descendants(os.getpid()))
    with pytest.raises(LaunchError) as info:
        call()
    assert isinstance(info.value, (TypeError, ValueError))   # what readers and old code catch
    assert says in str(info.value)
    # No harness frame but the public call itself; in IPython, the message alone.
    harness = [f.name for f in traceback.extract_tb(info.value.__traceback__)
               if f"labs{os.sep}harness" in f.filename]
    assert harness == ["launch"], harness
    shown = info.value._render_traceback_()
    assert len(shown) == 1 and "LaunchError" in shown[0] and "Traceback" not in shown[0]
    assert set(descendants(os.getpid())) <= before, "no worker may start"


def test_in_ipython_errors_are_short_and_an_uncaught_one_is_one_line_away():
    """A real IPython shell: an uncaught LaunchError and WorkerError print their message,
    no launcher frames; the WorkerError's last line says how to get it, and that works."""
    script = textwrap.dedent("""
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance(colors="nocolor")
        for cell in ["from labs import launch",
                     "launch(lambda rank, world_size: rank, 2)",
                     "print('---')",
                     "from tests.harness.test_errors import everyone_fails",
                     "launch(everyone_fails, 2, timeout=20, quiet=True)",
                     "print('---')",
                     "import sys; err = sys.last_value",
                     "print(type(err).__name__, sorted(err.tracebacks), "
                     "'everyone_fails' in err.tracebacks[1])"]:
            shell.run_cell(cell)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, cwd=REPO, env={**os.environ, "P2P_COURSE_SOLUTIONS": "1"})
    launch_error, worker_error, details = out.stdout.split("---\n")
    assert launch_error.count("\n") == 1 and "LaunchError" in launch_error, out.stdout + out.stderr
    assert "launcher.py" not in out.stdout and "Traceback" not in out.stdout
    lines = worker_error.splitlines()
    assert "WorkerError" in lines[0] and len(lines) <= 4, worker_error
    assert "sys.last_value" in lines[-1], worker_error
    assert details.strip() == "WorkerError [0, 1] True", out.stdout + out.stderr


# -- interrupts: the clean Interrupted, also when only the workers saw the signal -------------

def sleep_after_start(rank, world_size, folder):
    open(os.path.join(folder, f"{rank}.started"), "w").close()
    if rank == 0 and world_size > 1:
        dist.recv(torch.empty(3), src=1)        # blocked inside gloo: no Python code runs
    time.sleep(60)


def _interrupt_the_workers():
    """A kernel interrupt during a widget's callback: Jupyter signals the kernel's process
    group, and here only the workers see it."""
    for pid in last_worker_pids():
        os.kill(pid, signal.SIGINT)


def _interrupt_the_group():
    """A kernel interrupt during a cell: the kernel and its workers all get SIGINT."""
    for pid in last_worker_pids():
        os.kill(pid, signal.SIGINT)
    os.kill(os.getpid(), signal.SIGINT)


@pytest.mark.parametrize("interrupt", [_interrupt_the_workers, _interrupt_the_group],
                         ids=["workers only (a widget)", "kernel and workers (a cell)"])
def test_interrupted_workers_give_the_clean_interrupted(interrupt, tmp_path, no_leftover_workers):
    done = threading.Event()
    timer = threading.Thread(target=_when_started, args=(str(tmp_path), 2, interrupt, done))
    timer.start()
    try:
        with pytest.raises(Interrupted) as info:
            launch(sleep_after_start, 2, args=(str(tmp_path),), timeout=60, quiet=True)
    finally:
        done.set()
        timer.join()
    text = str(info.value)
    assert text.startswith("you stopped the launch, and its 2 workers with it.")
    assert "rank 0: blocked" in text and "in recv(from 1, tag 0, 3 x float32)" in text
    assert "WorkerError" not in text and "KeyboardInterrupt" not in text
    if interrupt is _interrupt_the_workers:     # the kernel learnt it from rank 1 itself
        assert "rank 1: interrupted in sleep_after_start (tests/harness/test_errors.py:" in text
    else:       # the kernel asked first: rank 1 may not have run its handler yet
        assert re.search(r"rank 1: (interrupted in sleep_after_start|not inside a torch"
                         r"\.distributed call)", text), text


# -- a hang's timeline lasts until the ranks were stopped --------------------------------------

def test_a_hangs_timeline_draws_the_blocked_calls_until_they_were_stopped(no_leftover_workers):
    launch(returns_rank, 1, quiet=True)                  # the fork server is warm
    with pytest.raises(HangError) as info:
        launch(blocked_sends, 2, timeout=3, pg_timeout=30, quiet=True)
    sends = [e for e in info.value.trace if e.op == "send"]
    assert [e.t_done for e in sends] == [None, None]
    # The deadline (3 s) counts from when both ranks joined; each posted its send right
    # after joining, so each was blocked for most of it (a generous margin for a loaded machine).
    assert all(e.t_stopped - e.t_post >= 1.0 for e in sends), [(e.t_post, e.t_stopped) for e in sends]
    figure = timeline_figure(info.value.trace)
    widths_ms = sorted(p.get_width() for p in figure.axes[0].patches)
    expected = sorted((e.t_stopped - e.t_post) * 1e3 for e in sends)
    assert widths_ms[-2:] == pytest.approx(expected), widths_ms   # drawn until stopped
    assert figure.axes[0].get_xlim()[1] >= max(e.t_stopped for e in sends) * 1e3


def test_a_gloo_timeouts_timeline_ends_each_call_at_its_error(no_leftover_workers):
    launch(returns_rank, 1, quiet=True)
    with pytest.raises(HangError, match="gloo's timeout") as info:
        launch(blocked_sends, 2, timeout=20, pg_timeout=1, quiet=True)
    sends = [e for e in info.value.trace if e.op == "send"]
    assert all(e.t_error is not None and e.t_error - e.t_post >= 0.9 for e in sends)
    widths_ms = sorted(p.get_width() for p in timeline_figure(info.value.trace).axes[0].patches)
    expected = sorted((e.t_error - e.t_post) * 1e3 for e in sends)
    assert widths_ms[-2:] == pytest.approx(expected), widths_ms   # drawn until the error


# -- a gloo abort: its text once ----------------------------------------------------------------

def float64_into_float32(rank, world_size):
    if rank == 0:
        dist.send(torch.ones(2, dtype=torch.float64), 1)
    else:
        dist.recv(torch.empty(2, dtype=torch.float32), 0)


def test_a_gloo_abort_prints_its_reason_once(capfd, no_leftover_workers):
    with pytest.raises(WorkerError) as info:
        launch(float64_into_float32, 2, timeout=20)
    printed = capfd.readouterr().out
    text = str(info.value)
    assert text.startswith("rank 1 was killed by signal SIGABRT")
    assert "what():" in text and text.count("16 vs 8") == 1
    assert "16 vs 8" not in printed, printed               # the replay leaves it to the error
    assert info.value.brief() == "rank 1: was killed by signal SIGABRT"
