"""The harness contract (COURSE.md): values, errors, hangs, output order, no leftovers."""
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch
import torch.distributed as dist

from labs import HangError, WorkerError, launch, last_worker_pids
from tests.procs import alive, kill_leftovers

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# -- worker functions (module level: workers import them by name) ----------------------

def all_reduce_rank(rank, world_size, scale=1.0):
    t = torch.tensor([float(rank + 1)]) * scale
    dist.all_reduce(t)
    return t


def raise_on(rank, world_size, bad):
    if rank == bad:
        raise ValueError(f"bad input on rank {rank}")
    dist.barrier()
    return rank


def die_on(rank, world_size, bad, how):
    if rank == bad:
        if how == "exit":
            os._exit(3)
        elif how == "abort":
            os.abort()
        else:
            os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)


def head_to_head(rank, world_size, numel=10):
    dist.send(torch.ones(numel), dst=1 - rank)
    dist.recv(torch.empty(numel), src=1 - rank)


def recv_only(rank, world_size):
    if rank == 0:
        dist.recv(torch.empty(4, dtype=torch.int64), src=1, tag=7)
    else:
        time.sleep(60)


def chatty(rank, world_size):
    # Ranks finish in reverse order, so arrival order differs from rank order.
    time.sleep(0.02 * (world_size - rank))
    for i in range(3):
        print(f"line {i} from rank {rank}")
    print(f"rank {rank} warns", file=sys.stderr)
    return rank * 10


def sleep_and_record(rank, world_size, pid_dir):
    # Written whole, then renamed: the test reads a .pid file as soon as it exists.
    path = os.path.join(pid_dir, f"{rank}.pid")
    with open(path + ".part", "w") as f:
        f.write(str(os.getpid()))
    os.replace(path + ".part", path)
    time.sleep(120)


def tensor_of(rank, world_size, numel):
    return torch.full((numel,), float(rank))


# -- values ------------------------------------------------------------------------------

@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_values_in_rank_order(world_size, no_leftover_workers):
    results = launch(all_reduce_rank, world_size, args=(2.0,), quiet=True)
    expected = 2.0 * world_size * (world_size + 1) / 2
    assert len(results) == world_size
    assert [r.item() for r in results] == [expected] * world_size
    assert isinstance(results, list)


def test_large_tensor_results_come_back_intact():
    results = launch(tensor_of, 2, args=(1_000_000,), quiet=True)
    assert [r.shape[0] for r in results] == [1_000_000, 1_000_000]
    assert results[1].sum().item() == 1_000_000


def test_trace_records_point_to_point_calls():
    results = launch(head_to_head_batched, 2, quiet=True)
    ops = sorted((e.rank, e.op, e.peer) for e in results.trace if e.op in ("isend", "irecv"))
    assert ops == [(0, "irecv", 1), (0, "isend", 1), (1, "irecv", 0), (1, "isend", 0)]
    assert all(e.t_done is not None for e in results.trace if e.op in ("isend", "irecv"))


def head_to_head_batched(rank, world_size):
    peer = 1 - rank
    buf = torch.empty(10)
    ops = [dist.P2POp(dist.isend, torch.ones(10), peer), dist.P2POp(dist.irecv, buf, peer)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    return buf.sum().item()


# -- worker errors and deaths -------------------------------------------------------------

def test_worker_exception_names_rank_and_message(no_leftover_workers):
    with pytest.raises(WorkerError) as info:
        launch(raise_on, 3, args=(1,), quiet=True)
    err = info.value
    assert err.ranks == [1]
    assert "rank 1 raised ValueError: bad input on rank 1" in str(err)
    assert "Traceback" in err.tracebacks[1] and "raise_on" in err.tracebacks[1]
    assert err.brief() == "rank 1: ValueError: bad input on rank 1"


@pytest.mark.parametrize("how, expect", [("exit", "exited with code 3"),
                                         ("kill", "was killed by signal SIGKILL"),
                                         ("abort", "was killed by signal SIGABRT")])
def test_worker_death_is_reported_and_others_are_stopped(how, expect):
    warm_up()
    with pytest.raises(WorkerError) as info:     # not a HangError: stopped at the death,
        launch(die_on, 3, args=(2, how), timeout=30, quiet=True)   # not at the deadline
    assert info.value.ranks == [2]
    assert f"rank 2 {expect}" in str(info.value)
    assert not kill_leftovers(last_worker_pids(), seconds=3)


# -- hangs -------------------------------------------------------------------------------

def warm_up():
    """Start the fork server (once per process; its start-up is not part of any deadline)."""
    launch(all_reduce_rank, 1, quiet=True)


def test_head_to_head_blocking_sends_hang_and_are_diagnosed(no_leftover_workers):
    warm_up()
    with pytest.raises(HangError) as info:
        launch(head_to_head, 2, timeout=3, quiet=True)
    assert isinstance(info.value, TimeoutError)
    brief = info.value.brief()
    assert "rank 0: blocked in send(to 1, tag 0, 10 x float32)" in brief
    assert "rank 1: blocked in send(to 0, tag 0, 10 x float32)" in brief
    pids = last_worker_pids()
    assert len(pids) == 2 and not [p for p in pids if alive(p)]
    sends = [(e.rank, e.op, e.peer, e.t_done) for e in info.value.trace]
    assert sends == [(0, "send", 1, None), (1, "send", 0, None)], "the trace shows the stuck calls"


def test_gloo_timeout_not_the_deadline_ends_a_deadlock():
    # pg_timeout, not the (much longer) launch deadline, ends the hang: the error says
    # which one fired (no wall-clock bound: the machine may be loaded).
    warm_up()
    with pytest.raises(HangError, match=r"gloo's timeout \(1 s\) fired"):
        launch(head_to_head, 2, timeout=20, pg_timeout=1, quiet=True)


def test_hang_past_the_deadline_reports_live_ranks(no_leftover_workers):
    # gloo's own timeout (30 s) is longer than the launch deadline: the launcher asks the
    # still-running workers what they are blocked in.
    warm_up()
    with pytest.raises(HangError) as info:
        launch(recv_only, 2, timeout=2, pg_timeout=30, quiet=True)
    assert "launch timeout (2 s)" in str(info.value)
    assert "rank 0: blocked in recv(from 1, tag 7, 4 x int64)" in info.value.brief()
    assert "rank 1: not inside a torch.distributed call" in info.value.brief()


# -- bad input -----------------------------------------------------------------------------

def test_lambda_and_nested_functions_are_rejected_with_advice():
    with pytest.raises(TypeError, match="lambda or a nested function.*labs/playground.py"):
        launch(lambda rank, ws: rank, 2)

    def inner(rank, world_size):
        return rank
    with pytest.raises(TypeError, match="cannot start 'inner'"):
        launch(inner, 2)


def test_function_defined_in_main_is_rejected_without_hanging():
    script = textwrap.dedent("""
        from labs import launch
        def fn(rank, world_size):
            return rank
        if __name__ == "__main__":
            try:
                launch(fn, 2)
            except TypeError as e:
                print("TypeError:", e)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, cwd=REPO)
    assert "defined in the notebook (module __main__)" in out.stdout, out.stderr


@pytest.mark.parametrize("world_size, exc", [(0, ValueError), (-1, ValueError),
                                             (1000, ValueError), (2.0, TypeError),
                                             ("4", TypeError), (True, TypeError)])
def test_bad_world_size(world_size, exc):
    with pytest.raises(exc, match="world_size must be"):
        launch(all_reduce_rank, world_size)


def test_unpicklable_args_are_rejected_with_advice():
    with pytest.raises(TypeError, match=r"args\[0\] \(lock\) cannot be sent.*build anything"):
        launch(all_reduce_rank, 2, args=(threading.Lock(),))
    with pytest.raises(TypeError, match="args must be a tuple"):
        launch(all_reduce_rank, 2, args=5)


# -- determinism and isolation ---------------------------------------------------------------

def test_output_is_rank_ordered_and_identical_across_runs(capfd):
    outputs = []
    for _ in range(3):
        results = launch(chatty, 4)
        assert results == [0, 10, 20, 30]
        outputs.append(capfd.readouterr().out)
    assert outputs[0] == outputs[1] == outputs[2]
    lines = outputs[0].splitlines()
    assert lines[:4] == ["[rank 0] line 0 from rank 0", "[rank 0] line 1 from rank 0",
                         "[rank 0] line 2 from rank 0", "[rank 0] rank 0 warns"]
    assert lines[-1] == "[rank 3] rank 3 warns" and len(lines) == 16


def test_parallel_launches_from_threads_do_not_collide():
    results, errors = {}, []

    def run(i):
        try:
            results[i] = [t.item() for t in launch(all_reduce_rank, 2, args=(float(i),),
                                                    quiet=True, timeout=60)]
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert results == {i: [3.0 * i, 3.0 * i] for i in range(8)}


@pytest.mark.slow           # two Python processes importing torch: make test, not test-fast
def test_parallel_launches_from_processes_do_not_collide():
    script = "from labs import launch\n" \
             "from tests.harness.test_launcher import all_reduce_rank as f\n" \
             "if __name__ == '__main__': print(launch(f, 2, quiet=True)[0].item())"
    procs = [subprocess.Popen([sys.executable, "-c", script], cwd=REPO, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [o.strip() for o, _ in outs] == ["3.0"] * 2, [e for _, e in outs]


# -- interrupts and parent death --------------------------------------------------------------

def _start_sleepers(tmp_path):
    # An interrupt asks the ranks where they are and waits 0.5 s for the answers (you want
    # your prompt back); on a machine loaded by a full suite a sleeping rank may answer later
    # than that. What the test checks is the answer, so it waits longer for it.
    script = textwrap.dedent(f"""
        from labs import launch
        from labs.harness.launch import supervise
        from tests.harness.test_launcher import sleep_and_record
        supervise.STATUS_WAIT_INTERRUPTED = 10.0
        if __name__ == "__main__":
            launch(sleep_and_record, 3, args=({str(tmp_path)!r},), timeout=100)
    """)
    # SIGINT as a terminal or a kernel has it (a background shell would pass it ignored).
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while len(list(tmp_path.glob("*.pid"))) < 3:
        assert time.time() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    time.sleep(0.2)
    return proc, [int(p.read_text()) for p in tmp_path.glob("*.pid")]


def test_keyboard_interrupt_in_parent_stops_workers(tmp_path):
    proc, pids = _start_sleepers(tmp_path)
    assert all(alive(p) for p in pids)
    proc.send_signal(signal.SIGINT)           # what a Jupyter "interrupt kernel" does
    _, err = proc.communicate(timeout=30)
    assert "Interrupted: you stopped the launch, and its 3 workers with it." in err, err
    assert "rank 2: not inside a torch.distributed call" in err, err
    assert not kill_leftovers(pids), "workers outlived an interrupted launch"


def test_workers_exit_when_the_parent_is_killed(tmp_path):
    proc, pids = _start_sleepers(tmp_path)
    proc.kill()                               # no cleanup code runs in the parent
    proc.communicate(timeout=30)
    assert not kill_leftovers(pids), "workers outlived their killed parent"


def what_the_worker_got(rank, world_size, *args):
    return (os.environ.get("P2P_TEST_SETTING"), torch.get_num_threads(), args)


def test_every_worker_gets_the_whole_launch_spec(no_leftover_workers):
    """env, threads and args travel in one LaunchSpec, identical for every rank."""
    got = launch(what_the_worker_got, 3, args=(1, "two", [3.0]), threads=2,
                 env={"P2P_TEST_SETTING": "on"}, quiet=True)
    assert got == [("on", 2, (1, "two", [3.0]))] * 3
    assert len(last_worker_pids()) == 3


def test_results_pickle_like_lists():
    results = launch(all_reduce_rank, 2, quiet=True)
    assert pickle.loads(pickle.dumps(list(results)))[0].item() == 3.0
