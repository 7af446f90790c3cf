"""Lesson 11's claims: torchrun's "Root Cause", and the flight recorder on gloo."""
from __future__ import annotations

import json
import os
import tempfile

import torch
import torch.distributed as dist

from labs import launch
from labs.claims.registry import ClaimResult, claim


@claim("11", "torchrun's 'Root Cause (first observed failure)' is the failure with the "
             "smallest error timestamp, kept in whole seconds; failures in the same second tie, "
             "and the one torchrun recorded first wins, not the first to fail")
def torchrun_root_cause_is_the_smallest_whole_second():
    # Source: torch/distributed/elastic/multiprocessing/errors/__init__.py (get_first_failure:
    # min over the failures by timestamp; ProcessFailure.timestamp = int(time.time()) or the
    # error file's) and multiprocessing/api.py (_poll: the failures found first, then the
    # ranks it stops).
    # ChildFailedError is what torchrun builds its report from.
    from torch.distributed.elastic.multiprocessing.errors import (ChildFailedError,
                                                                  ProcessFailure)
    with tempfile.TemporaryDirectory() as where:
        files = _error_files(where, 4)

        def root(order):
            # torchrun's table of failures, in the order it recorded them (dicts keep it)
            fails = {r: ProcessFailure(r, 1000 + r, 1, files[r]) for r in order}
            return ChildFailedError("job", fails).get_first_failure()[0], fails
        whole = all(isinstance(f.timestamp, int) for f in root(range(4))[1].values())
        # The same second everywhere (forced: the check must not depend on the clock)
        for f in files:
            _set_timestamp(f, 1_000_000)
        tie = root([0, 1, 2, 3])[0]
        tie_3_first = root([3, 0, 1, 2])[0]
        _set_timestamp(files[2], 999_999)          # rank 2 one second earlier
        earlier = root([3, 0, 1, 2])[0]
    holds = whole and tie == 0 and tie_3_first == 3 and earlier == 2
    return ClaimResult(holds, f"timestamps are ints: {whole}; same second, recorded in rank "
                              f"order: rank {tie}; same second, rank 3 recorded first: rank "
                              f"{tie_3_first}; rank 2 one second earlier: rank {earlier}")


def _error_files(where, ranks) -> list[str]:
    """One error file per rank in `where`, written in rank order by torch's own ErrorHandler
    (what @record uses), as each failing rank of a torchrun job writes its own."""
    from torch.distributed.elastic.multiprocessing.errors.error_handler import ErrorHandler
    files, kept = [], os.environ.get("TORCHELASTIC_ERROR_FILE")
    try:
        for rank in range(ranks):
            files.append(os.path.join(where, f"error{rank}.json"))
            os.environ["TORCHELASTIC_ERROR_FILE"] = files[-1]
            try:
                raise RuntimeError(f"rank {rank} failed")
            except RuntimeError as exc:
                ErrorHandler().record_exception(exc)
    finally:
        if kept is None:
            os.environ.pop("TORCHELASTIC_ERROR_FILE", None)
        else:
            os.environ["TORCHELASTIC_ERROR_FILE"] = kept
    return files


def _set_timestamp(path, seconds):
    with open(path) as f:
        data = json.load(f)
    data["message"]["extraInfo"]["timestamp"] = str(seconds)
    with open(path, "w") as f:
        json.dump(data, f)


def flight_recorder_record(rank, world_size):
    """An all_reduce, a batch, a blocking send/recv and a barrier; rank 0's flight record."""
    t = torch.ones(4)
    dist.all_reduce(t)
    ops = [dist.P2POp(dist.isend, t, 1 - rank), dist.P2POp(dist.irecv, torch.empty(4), 1 - rank)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    if rank == 0:
        dist.send(t, 1)
    else:
        dist.recv(t, 0)
    dist.barrier()
    entries = json.loads(torch._C._distributed_c10d._dump_fr_trace_json())["entries"]
    return [e["profiling_name"] for e in entries]


@claim("11", "the flight recorder (TORCH_FR_BUFFER_SIZE) also records gloo collectives, "
             "not point-to-point operations")
def flight_recorder_records_gloo_collectives_not_p2p():
    names = launch(flight_recorder_record, 2, env={"TORCH_FR_BUFFER_SIZE": "100"},
                   quiet=True)[0]
    p2p = [n for n in names if any(w in n for w in ("send", "recv"))]
    holds = "gloo:all_reduce" in names and "gloo:barrier" in names and not p2p
    return ClaimResult(holds, f"all_reduce, isend+irecv batch, send/recv, barrier on rank 0; "
                              f"recorded: {', '.join(names)}")


@claim("11", "a TCPStore server, the rendezvous store that torchrun's agent hosts, listens on "
             "every interface whatever host name it is given")
def tcp_store_listens_on_every_interface():
    # Source: torch/csrc/distributed/c10d/TCPStoreLibUvBackend.cpp and TCPStoreBackend.cpp:
    # the server socket binds to the wildcard address (IPv6 any, dual stack, or IPv4 any);
    # the host name is for clients only. torchrun's c10d rendezvous and --standalone use it.
    from labs.harness.commands.listeners import EVERY_INTERFACE, host_of, own_listeners
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    try:
        # Each listening socket of this process, asked where it is bound (getsockname).
        hosts = sorted({host_of(a) for a in own_listeners() if a.endswith(f":{store.port}")})
    finally:
        del store
    holds = bool(hosts) and all(h in EVERY_INTERFACE for h in hosts)
    # Which wildcard (:: with IPv6, else 0.0.0.0) depends on the machine: named only if wrong.
    seen = "a wildcard address (:: or 0.0.0.0)" if holds else \
        (" and ".join(hosts) or "nothing seen")
    return ClaimResult(holds, f"TCPStore('127.0.0.1', is_master=True) listens on {seen}, "
                              f"not only on 127.0.0.1: {holds}")


@claim("11", "importing torch._dynamo after init_process_group, with no DDP and no compile, "
             "pins the group: its first import imports torch.distributed.nn.functional, whose "
             "default arguments hold group.WORLD, so the group's gloo worker threads still run "
             "after destroy_process_group(); torch.distributed.nn imported before joining "
             "leaves none")
def importing_dynamo_after_joining_pins_the_group():
    # Source (torch 2.13): torch/_dynamo/variables/functions.py imports
    # torch.distributed.fsdp._fully_shard, whose imports reach
    # torch/distributed/_shard/sharded_tensor/reshard.py: `from torch.distributed.nn.functional
    # import all_to_all, all_to_all_single`; functional.py's defaults are `group=group.WORLD`.
    from labs.views.jobs import run_importing_dynamo, threads_left

    after, first = run_importing_dynamo(), run_importing_dynamo(["--import-first"])
    pinned, freed = threads_left(after), threads_left(first)
    holds = pinned == [2, 2] and freed == [0, 0] and after.succeeded and first.succeeded
    return ClaimResult(holds, f"torch._dynamo imported after joining: the group's gloo worker "
                              f"threads still running after destroy_process_group() "
                              f"{pinned}; torch.distributed.nn imported before joining: "
                              f"{freed}")


@claim("11", "after DistributedDataParallel, destroy_process_group() frees nothing: DDP's "
             "constructor imports torch._dynamo, whose first import imports "
             "torch.distributed.nn, and its default arguments hold the group; gloo's threads "
             "then end at interpreter shutdown, where releasing a tensor aborts the process "
             "(CPython 3.13 and earlier). Imported before joining, torch.distributed.nn holds "
             "nothing")
def destroy_frees_the_group_only_if_nothing_holds_it():
    # Source: torch/nn/parallel/distributed.py (DDP.__init__ calls
    # torch._dynamo.utils.get_optimize_ddp_mode(): the first use imports torch._dynamo, and
    # with it torch.distributed.nn.functional, see the claim above);
    # torch/distributed/nn/functional.py (`def broadcast(tensor, src, group=group.WORLD)` and
    # 9 more: a default is evaluated at import). CPython <= 3.13's take_gil ends a thread
    # that asks for the GIL during finalization (pthread_exit), and libstdc++ aborts when
    # that unwinds through gloo's destructors ("terminate called without an active
    # exception"); 3.14 hangs such a thread instead (python/cpython gh-87135, GH-105805).
    from labs.views.jobs import aborted, leaving_run, threads_left

    def leave(args):
        run = leaving_run(args)
        return run.succeeded, threads_left(run), aborted(run)

    pinned = leave([])
    first = leave(["--import-first"])
    holds = pinned == (False, [2, 2], True) and first == (True, [0, 0], False)
    return ClaimResult(holds, f"DDP, then destroy_process_group(): the group's gloo "
                              f"worker threads still running {pinned[1]}, a rank aborted at "
                              f"exit: {pinned[2]}; "
                              f"torch.distributed.nn imported before joining: {first[1]}, "
                              f"job succeeded: {first[0]}")
