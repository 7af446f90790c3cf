"""The rank side of the doctor: `torchrun ... -m labs.doctor.agent SCRIPT ARGS`.

In each rank: force gloo in `init_process_group` (a script asking for NCCL runs on gloo;
the start event says what it asked for), open the complete record of the process group's
calls (labs.harness.grading.record) and the buffer watch, run the script as `__main__`
with `runpy.run_path`, and append every event to DOCTOR_DIR/rank<R>.jsonl, one flushed
JSON line each, so that a rank killed in a hang leaves its record up to the call it hangs in.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import os
import runpy
import sys
import time
import traceback
from dataclasses import asdict

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from labs.doctor import cuda, gpu_view
from labs.doctor.events import Event, last_state, rank_file, read_events
from labs.doctor.exits import ARGPARSE
from labs.doctor.holders import encode, holders
from labs.doctor.run import BARE_ENV, CWD_ENV, DIR_ENV
from labs.doctor.watch import BufferWatch
from labs.doctor.works import Works
from labs.harness.commands.threads import gloo_group_threads
from labs.harness.grading import callers
from labs.harness.grading import record as rec

LINGER_S = 2.0                    # how long a rank whose script failed waits for its peers
POLL_STOP = "stopped by the doctor in a loop polling is_completed()"


class Agent:
    """Turns the record's callbacks into events on this rank's file."""

    def __init__(self, folder: str, rank: int):
        self.rank, self.file = rank, open(rank_file(folder, rank), "a", buffering=1)
        self.batch, self.nbatch, self.batch_seqs = None, 0, []
        self.batch_of = {}                        # op seq -> (batch, position in it)
        self.own_s = 0.0
        self.watch = BufferWatch(self.touched, self.raced, self.stream)
        self.waiting = {}                         # op seq -> the line of its wait
        self.asked, self.device_id, self.noted = "", False, ""
        self.cuda = None                          # the stand-in's state, while mapped
        self.chains = set()                       # chains of the script's frames written
        self.device_told = False

    def note(self) -> None:
        """The report's header line, again whenever it changes (the last one counts)."""
        text = cuda.header(self.asked, self.device_id, bool(self.cuda and self.cuda.used),
                           self.cuda.differences if self.cuda else ())
        if text and text != self.noted:
            self.noted = text
            self.emit("backend", text=text)

    def stream(self) -> str:
        return self.cuda.stream_name() if self.cuda is not None else ""

    def emit(self, event: str, **fields) -> None:
        self.file.write(Event(self.rank, event, time.perf_counter(), **fields).to_line())
        if fields.get("where") and event not in ("exit", "frames"):    # exit: its traceback
            self.chain(callers.frames(), fields["where"])

    def chain(self, frames: list, where: str) -> None:
        """The script's frames that led to `where`, once per distinct chain (a "frames"
        event): the report shows each call site, as a traceback does."""
        if len(frames) > 1 and frames[0].where == where and tuple(frames) not in self.chains:
            self.chains.add(tuple(frames))
            self.emit("frames", where=where, frames=[asdict(f) for f in frames])

    def touched(self, seq, where, text):
        self.emit("touched", seq=seq, where=where, text=text)

    def raced(self, seq, where, text, stream):
        self.emit("raced", seq=seq, where=where, text=text, stream=stream)

    def __call__(self, event, op, **info):
        start = time.perf_counter()
        if event == "call":
            self._first_device()
            batch = self.batch if op.kind in ("send", "recv") else None
            self.emit("call", **_op_fields(op), batch=batch, stream=self.stream())
        elif event == "post":
            self._post(op, info.get("tensors", []))
        elif event == "raised":
            self.emit("raised", **_op_fields(op), text=info["error"], batch=self.batch)
        elif event in ("wait", "wait_failed", "waited"):
            self._wait(event, op, info)
        self.own_s += time.perf_counter() - start

    def _first_device(self) -> None:
        """At the first communication call: the CUDA device the rank was on (index) and
        the indices it named (text), for NCCL's one-GPU-per-rank rule (portability.py)."""
        if self.cuda is not None and self.cuda.used and not self.device_told:
            self.device_told = True
            self.emit("device", index=self.cuda.device,
                      text=",".join(map(str, sorted(self.cuda.named))))

    def _post(self, op, tensors):
        fields = _op_fields(op)
        if self.batch is not None and op.kind in ("send", "recv"):
            fields["batch"] = self.batch
            self.batch_of[op.seq] = (self.batch, len(self.batch_seqs))
            self.batch_seqs.append(op.seq)
        self.emit("post", **fields, stream=self.stream())
        if op.kind in ("send", "recv") and op.returned_work:
            self.watch.posted(op.seq, op.kind == "send", tensors)
        elif op.kind == "recv":              # a blocking receive: waited where it was made
            self.watch.landed(op.seq, tensors, op.where)

    def _wait(self, event, op, info):
        where = rec.caller()[0] if event == "wait" else ""
        text = info.get("error", "") if event == "wait_failed" else op.changed_in_flight
        source = op.source if event == "waited" else None    # an any-source receive's sender
        self.emit(event, seq=op.seq, where=where, text=text, peer=source)
        if event == "wait" and op.seq in self.batch_of:
            batch, index = self.batch_of[op.seq]
            self.emit("work", seq=op.seq, batch=batch, index=index, where=where)
        if event == "wait":
            self.waiting[op.seq] = where
        else:
            self.watch.done(op.seq, self.waiting.pop(op.seq, ""), event == "waited")

    def wrap_batch(self, original):
        @functools.wraps(original)
        def batch_isend_irecv(p2p_op_list):
            self.batch, self.batch_seqs = self.nbatch, []
            self.nbatch += 1
            try:
                works = original(p2p_op_list)
            finally:
                batch, seqs, self.batch = self.batch, self.batch_seqs, None
            self.emit("batch", batch=batch, seqs=seqs, nworks=len(works or []),
                      where=rec.caller()[0])
            return Works(works, batch, self.emit) if isinstance(works, list) else works
        return batch_isend_irecv

    def wrap_destroy(self, original):
        @functools.wraps(original)
        def destroy_process_group(group=None):
            # ids only: a reference kept here would hold the groups itself
            ids = {id(g) for g in c10d._world.pg_map} if group is None else set()
            original(group)
            if group is None:           # every group gone: so should their gloo threads be
                left = gloo_group_threads()
                held = holders(ids) if left else []
                self.emit("destroyed", where=rec.caller()[0], numel=left, text=encode(held))
        return destroy_process_group

    def wrap_init(self, original):
        @functools.wraps(original)
        def init_process_group(backend=None, *args, **kwargs):
            asked = str(backend) if backend is not None else ""
            device_id = kwargs.pop("device_id", None) is not None   # NCCL's eager init
            self.asked, self.device_id = self.asked or asked, self.device_id or device_id
            self.note()
            out = original("gloo", *args, **kwargs)
            gpu_view.asked_for(c10d._get_default_group(), asked)      # get_backend()'s answer
            self.emit("init", text=asked, index=int(device_id), where=rec.caller()[0])
            return out
        return init_process_group

    def wrap_new_group(self, original):
        @functools.wraps(original)
        def new_group(ranks=None, timeout=None, backend=None, pg_options=None, *args, **kw):
            asked = str(backend) if backend is not None else ""
            kw.pop("device_id", None)
            if "nccl" in asked:                  # NCCL's options mean nothing to gloo
                backend, pg_options = "gloo", None
            out = original(ranks, timeout, backend, pg_options, *args, **kw)
            gpu_view.asked_for(out, asked or self.asked)
            self.emit("new_group", text=asked, numel=len(ranks or []), where=rec.caller()[0],
                      group=getattr(out, "group_name", ""))
            return out
        return new_group


def _op_fields(op) -> dict:
    return dict(seq=op.seq, kind=op.kind, name=op.name, api=op.api, peer=op.peer,
                numel=op.numel, dtype=op.dtype, tag=op.tag, where=op.where,
                nbytes=op.numel * _itemsize(op.dtype), group=op.group,
                group_ranks=list(op.group_ranks) or None)


@functools.cache
def _itemsize(dtype: str) -> int:
    import torch
    try:
        return torch.empty(0, dtype=getattr(torch, dtype)).element_size()
    except (AttributeError, TypeError):
        return 0


def _patch(agent: Agent) -> None:
    for module in (dist, c10d):
        module.init_process_group = agent.wrap_init(c10d.init_process_group)
        module.batch_isend_irecv = agent.wrap_batch(c10d.batch_isend_irecv)
        module.destroy_process_group = agent.wrap_destroy(c10d.destroy_process_group)
        module.new_group = agent.wrap_new_group(c10d.new_group)


def _failure(error: BaseException) -> dict:
    """The exit event's fields for an exception: its text and the script's line."""
    frames = traceback.extract_tb(error.__traceback__)
    mine = [f for f in frames if not f.filename.startswith(callers._NOT_CALLERS)
            and not f.filename.startswith("<")]
    where = f"{mine[-1].filename}:{mine[-1].lineno}" if mine else ""
    inside = [f.name for f in frames if "torch/distributed/" in f.filename
              and f.name not in callers._WRAPPERS]
    text = f"{type(error).__name__}: {error}".strip().splitlines()[0][:500]
    if isinstance(error, cuda.NotMapped):     # the script could not run here: not a call's
        inside = []                           # failure (exit 2, not a finding)
    fields = dict(text=text, where=where, api=inside[0] if inside else "")
    if frames and frames[-1].name == "_check_polling":     # the record's own stop: run()
        last = list(traceback.walk_tb(error.__traceback__))[-1][0]
        op = last.f_locals.get("op")
        return dict(fields, kind="polled", api="is_completed",
                    seq=op.seq if op is not None else -1, text=POLL_STOP)
    if inside and "torch/distributed/" in frames[-1].filename \
            and (frames[-1].line or "").startswith("raise"):
        fields["kind"] = "python"     # raised by torch's Python, before any backend
        fields["name"] = f"{_qualname(error, inside[0])}, {frames[-1].name}"
    return fields


def _qualname(error: BaseException, name: str) -> str:
    """'P2POp.__new__' for the torch function named `name` in the traceback."""
    codes = [f.f_code for f, _ in traceback.walk_tb(error.__traceback__)]
    return next((c.co_qualname for c in codes if c.co_name == name
                 and "torch/distributed/" in c.co_filename), name)


def _exited(done: SystemExit) -> dict:
    """The exit event's fields for sys.exit(code) with code != 0: the script's line, and,
    when argparse refused the script's command line, argparse's own words (it printed them
    to stderr; the exception carries only the code)."""
    fields = _failure(done)
    tb = done.__traceback__
    while tb is not None:
        parser = tb.tb_frame.f_locals.get("self")
        if tb.tb_frame.f_code.co_name == "error" and isinstance(parser, argparse.ArgumentParser):
            usage = " ".join(parser.format_usage().split())
            fields["text"] += (f": {ARGPARSE}: {parser.prog}: error: "
                               f"{tb.tb_frame.f_locals.get('message', '')} ({usage})")
            break
        tb = tb.tb_next
    return fields


@contextlib.contextmanager
def _recording(agent: Agent):
    with rec.record(), rec.listen(agent), agent.watch:
        yield


@contextlib.contextmanager
def _mapped(agent: Agent):
    """CUDA onto the CPU (labs/doctor/cuda.py), for the script only."""
    with cuda.mapping(cuda.standin.local_devices(), agent.note) as state:
        agent.cuda, state.order = state, agent.watch.order
        try:
            yield
        finally:
            agent.cuda = None


def run(script: str, args: list[str], folder: str) -> None:
    """Run `script` as __main__ under the record; its events go to `folder`."""
    agent = Agent(folder, int(os.environ.get("RANK", "0")))
    agent.emit("start", numel=int(os.environ.get("WORLD_SIZE", "1")))
    _patch(agent)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    start, fields = time.perf_counter(), {}
    recording = os.environ.get(BARE_ENV) != "1"
    try:
        with _recording(agent) if recording else contextlib.nullcontext():
            # The first tensor op under the modes: its cost, once per process, is timed
            # here, not inside the script.
            torch.zeros(1).add_(1)
            warmup, start = time.perf_counter() - start, time.perf_counter()
            agent.emit("ready", elapsed_s=warmup)
            with _mapped(agent):
                runpy.run_path(script, run_name="__main__")
    except SystemExit as done:
        if done.code not in (None, 0):
            fields = _exited(done)
        raise
    except BaseException as error:
        fields = _failure(error)
        agent.chain(callers.frames_of(error), fields["where"])
        if fields.get("kind") == "polled":
            # The record stopped a loop polling is_completed() (it never ends on gloo): the
            # report says so; the rank ends without showing the record's own exception.
            raise SystemExit(1) from None
        raise
    finally:
        elapsed = time.perf_counter() - start
        agent.emit("exit", overhead_s=agent.own_s + agent.watch.own_s, elapsed_s=elapsed,
                   **fields)
        agent.file.close()
        if fields:
            _let_peers_settle(folder, agent.rank, int(os.environ.get("WORLD_SIZE", "1")))


def _let_peers_settle(folder: str, rank: int, world_size: int) -> None:
    """A rank whose script failed waits (LINGER_S at most) until every other rank has ended
    or waits inside a call. Its exit makes torchrun stop the others at once: without this
    wait, a peer about to fail on its own line would be reported as stopped, and the report
    would show which rank torchrun stopped first, not what each rank's script does."""
    until = time.monotonic() + LINGER_S
    while time.monotonic() < until:
        events = read_events(folder)
        if all(r in events and last_state(events[r]) != "running"
               for r in range(world_size) if r != rank):
            return
        time.sleep(0.02)


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m labs.doctor.agent SCRIPT [ARGS] (torchrun runs it)")
    if os.environ.get(CWD_ENV):
        os.chdir(os.environ[CWD_ENV])
    run(sys.argv[1], sys.argv[2:], os.environ.get(DIR_ENV, "."))


if __name__ == "__main__":
    main()
