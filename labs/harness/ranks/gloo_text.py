"""Gloo's error text, made stable: what a lesson, a claim or an error message prints of it.

Gloo's messages carry what differs from run to run: the C++ source location of the check
that failed ('[.../gloo/transport/tcp/pair.cc:801] '), a pair's address and port, object
addresses, a C++ backtrace after the first line. Every place that shows gloo's words goes
through one of these, each for one way of showing them:

    gloo_message(error)    the first line, after the source location: what a lesson prints
    short_locations(text)  source locations kept but shortened to gloo/..., ports masked:
                           WorkerError.brief() (the reader still sees which gloo file)
    stable(text)           locations, addresses and ports removed: the ledger's claims
    abort_reason(error)    the reason a process killed by gloo printed ('what(): ...')
"""
from __future__ import annotations

import re

# '[enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] ' and the like.
SOURCE_LOCATION = re.compile(r"\[(enforce fail at )?[^\]\[]*\.(cc|cpp|h|hpp)(:\d+)?\]\s*")
GLOO_FILE = re.compile(r"\[[^\]]*?(gloo/[^\]:]+)(:\d+)?\]")
PAIR_ADDRESS = re.compile(r"\s*\(\[[0-9.]+\]:[^)]*\)")
LOOPBACK_PORT = re.compile(r"(127\.0\.0\.1\]?):\d+")


def gloo_message(error) -> str:
    """'[.../unbound_buffer.cc:78] Timed out waiting ...' -> 'Timed out waiting ...'.

    Only the first line: gloo appends context (addresses, a C++ backtrace) that differs
    from run to run.
    """
    text = str(error).split("] ", 1)[-1]
    return text.splitlines()[0] if text else ""


def short_locations(text: str) -> str:
    """'[/__w/.../gloo/transport/tcp/pair.cc:801] msg' -> '[gloo/transport/tcp/pair.cc] msg'."""
    text = GLOO_FILE.sub(r"[\1]", text)
    return re.sub(r"\[127\.0\.0\.1\]:\d+", "[127.0.0.1]:<port>", text)


def stable(text: str) -> str:
    """Without C++ source locations ('[enforce fail at .../pair.cc:801] '), object and
    socket addresses, ports: the part of a message that is the same on every run."""
    text = SOURCE_LOCATION.sub("", text)
    text = re.sub(r" at 0x[0-9a-f]+", "", text)
    text = PAIR_ADDRESS.sub("", text)
    return LOOPBACK_PORT.sub(r"\1:<port>", text).strip()


def abort_reason(error) -> str:
    """What a process killed by gloo printed before dying (its 'what():' line), stable;
    `error` is a WorkerError (its message and the ranks' `.outputs` are searched)."""
    outputs = getattr(error, "outputs", {}) or {}
    for text in [str(error), *outputs.values()]:
        for line in text.splitlines():
            if "what():" in line:
                return stable(line.split("what():", 1)[1])
    return "(it printed no reason)"
