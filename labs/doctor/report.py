"""The report: one compiler-style entry per problem, then how the run ended.

    labs/scripts/doctor/head_to_head.py:23: deadlock: ranks 0, 1 wait for each other
        ranks 0, 1 at labs/scripts/doctor/head_to_head.py:23
        gloo, observed: ...
        NCCL, modelled, not run here: ... (source: ...)
        lesson: notebooks/04_deadlock_hazards.ipynb

Paths are shown relative to the current directory (or to the course's root), never as
this machine's absolute paths; timings are kept apart (`text(timings=False)` is the same
on every run).
"""
from __future__ import annotations

import os
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from labs.doctor import exits
from labs.doctor.findings import NCCL_LABEL, Finding
from labs.harness.commands.torchrun import ROOT

CLEAN = "no problems found on gloo; none predicted on NCCL"
PRINTED_LINES = 10                 # per rank, in the command line's report


def show_path(where: str) -> str:
    """'x.py:12' relative to the current directory, else to the course's root."""
    path, _, line = where.rpartition(":")
    if not path:
        return where
    p = Path(path)
    for base in (Path.cwd(), ROOT):
        try:
            return f"{p.resolve().relative_to(base.resolve())}:{line}"
        except ValueError:
            continue
    return where


def scrub(text: str) -> str:
    """Machine paths, build paths and addresses out of an error message."""
    for base in (str(Path.cwd()), str(ROOT)):
        text = text.replace(base + os.sep, "")
    text = re.sub(r"\[enforce fail at \S+\] ", "", text)
    text = re.sub(r"\[/\S*/(gloo/\S+)\]", r"[\1]", text)
    text = re.sub(r" \(\[?[\d.:]+\]?:\d+ <-> \S+\)", "", text)
    return re.sub(r"/\S*/site-packages/", "<site-packages>/", text)


def merged(findings: list[Finding]) -> list[Finding]:
    """The same problem at the same lines on several ranks: one entry naming them all. The
    entry's words are the first rank's: when another rank's differ (its peer), they say so."""
    out, index, texts = [], {}, {}
    for f in findings:
        key = (f.kind, tuple(w for _, w in f.where))
        if key in index:
            first = index[key]
            first.ranks = tuple(sorted(set(first.ranks) | set(f.ranks)))
            first.where = first.where + [w for w in f.where if w not in first.where]
            texts[key] |= {(f.title, f.gloo, f.nccl)}
            continue
        index[key], texts[key] = f, {(f.title, f.gloo, f.nccl)}
        out.append(f)
    for key, f in index.items():
        if len(texts[key]) < 2:
            continue
        # each rank's own peers: say whose words these are, and that the others differ
        r, others = f.where[0][0], [x for x in f.ranks if x != f.where[0][0]]
        alike = (f"; likewise on ranks {', '.join(map(str, others))} with their own peers"
                 if len(others) > 1 else f"; likewise on rank {others[0]} with its own peers")
        if len({t for t, _, _ in texts[key]}) > 1:
            f.title = f"rank {r}: {f.title}{alike}"
        elif not f.gloo.startswith(f"rank {r}"):
            f.gloo = f"rank {r}: {f.gloo}{alike}"
        else:
            f.gloo += alike
    return out


def _wrap(head: str, text: str) -> list[str]:
    return textwrap.wrap(scrub(text), 96, initial_indent=f"    {head}",
                         subsequent_indent="        ", break_long_words=False)


def _ranks(ranks) -> str:
    ranks = sorted(set(ranks))
    return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"


def locations(wheres: list, chains: dict) -> list[str]:
    """'ranks 0, 1 at x.py:31', then, where the script's own frames led there, each chain of
    calls, innermost first, as a traceback shows it ('x.py:31 in attend <- called from x.py:52
    in main'), with the ranks that took it when not all of them did."""
    places: dict[str, list] = {}
    for rank, where in wheres:
        places.setdefault(where, []).append(rank)
    lines = []
    for where, ranks in places.items():
        lines.append(f"    {_ranks(ranks)} at {show_path(where)}")
        taken: dict[tuple, list] = {}
        for rank in ranks:
            for chain in chains.get((rank, where), []):
                taken.setdefault(chain, []).append(rank)
        for chain, by in taken.items():
            calls = [f"{show_path(f'{file}:{line}')} in {function}" for file, line, function in chain]
            lines.append(f"        {calls[0]}" + ("" if set(by) == set(ranks) else
                                                  f" ({_ranks(by)})"))
            lines += [f"          <- called from {call}" for call in calls[1:]]
    return lines


def chains_of(events: dict) -> dict:
    """(rank, where) -> the chains of the script's frames that led there ("frames" events)."""
    out: dict = {}
    for rank, evs in events.items():
        for e in evs:
            if e.event == "frames" and e.frames:
                chain = tuple((f["file"], f["line"], f["function"]) for f in e.frames)
                out.setdefault((rank, e.where), []).append(chain)
    return out


def entry(f: Finding, chains: dict | None = None) -> list[str]:
    level = "note" if f.note else "warning, NCCL only" if f.nccl_only else \
        "warning" if f.warning else "error"
    lines = [f"{show_path(f.first_where)}: {level} [{f.kind}]: {f.title}"]
    lines += locations(f.where, chains or {})
    lines += _wrap("gloo, a risk not seen in this run: " if f.note else "gloo, observed: ",
                   f.gloo)
    source = f" (source: {f.source})" if f.source else ""
    lines += _wrap(f"{NCCL_LABEL}: ", f.nccl + source)
    lines += [f"    {scrub(line)}" for line in f.extra if isinstance(line, str)]
    lines.append(f"    lesson: {f.lesson}")
    return lines


@dataclass
class Report:
    command: str
    world_size: int
    findings: list
    ending: list                   # how the run ended, stable lines
    notes: list = field(default_factory=list)      # the script's own errors, backend asked
    status: int = 0
    timings: list = field(default_factory=list)    # overhead and durations (vary by run)
    timeline: str = ""             # the PNG's path, if one was saved
    runs: dict = field(default_factory=dict, repr=False)    # rank -> RankRun
    outcome: object = field(default=None, repr=False)        # labs.doctor.run.Outcome
    checked: bool | None = None    # False: no process group made and used (nothing checked)
    saved_outputs: str = ""        # where every rank's whole output was saved (--out)

    @property
    def outputs(self) -> dict:
        """rank -> what it printed (labs.harness.commands.torchrun.RankOutput)."""
        return self.outcome.outputs if self.outcome is not None else {}

    def text(self, timings: bool = True, printed: bool = False) -> str:
        """The report; with `printed`, what the ranks printed too (the command line's)."""
        lines = [f"$ {self.command}", f"{self.world_size} rank"
                 f"{'s' if self.world_size != 1 else ''}, run on gloo under torchrun",
                 *[scrub(n) for n in self.notes], *self.ending, ""]
        if printed:
            lines += self.printed() + [""]
        chains = chains_of(self.outcome.events) if self.outcome is not None else {}
        for f in self.findings:
            lines += entry(f, chains) + [""]
        lines.append(self.verdict())
        if timings:
            lines += self.timings + ([f"timeline: {show_path(self.timeline + ':0')[:-2]}"]
                                     if self.timeline else [])
        return "\n".join(lines)

    def printed(self, limit: int = PRINTED_LINES) -> list[str]:
        """What each rank printed on stdout, in rank order (its last `limit` lines), and
        where the rest and stderr are."""
        where = (f"saved in {show_path(self.saved_outputs + ':0')[:-2]}" if self.saved_outputs
                 else "--out DIR saves every rank's output")
        lines, cut, errs = [], [], []
        for rank, out in sorted(self.outputs.items()):
            said = out.stdout.splitlines()
            if len(said) > limit:
                cut.append(f"rank {rank}: {len(said) - limit}")
            lines += [f"    [rank {rank}] {line}" for line in said[-limit:]]
            if out.stderr.strip():
                errs.append(f"rank {rank}: {len(out.stderr.splitlines())}")
        head = ("what the ranks printed (stdout, rank order)" + (
            f"; earlier lines not shown ({', '.join(cut)}): {where}" if cut else "") + ":")
        lines = [head, *lines] if lines else ["the ranks printed nothing on stdout"]
        if errs:
            lines.append(f"stderr, lines written ({', '.join(errs)}): {where}")
        return lines

    def all_outputs(self) -> str:
        """Every rank's whole output, stdout then stderr, in rank order."""
        parts = []
        for rank, out in sorted(self.outputs.items()):
            parts += [f"== rank {rank} stdout ==", out.stdout.rstrip("\n"),
                      f"== rank {rank} stderr ==", out.stderr.rstrip("\n")]
        return "\n".join(parts) + "\n"

    @property
    def problems(self) -> list:
        """The findings that count (exit status 1); notes do not."""
        return [f for f in self.findings if not f.note]

    def verdict(self) -> str:
        notes = len(self.findings) - len(self.problems)
        said = f" ({notes} note{'s' if notes > 1 else ''} above)" if notes else ""
        if self.status == 2 and not self.problems:
            return exits.verdict(self) + said
        if not self.problems:
            unknown = any(n.startswith("not modelled") for n in self.notes)
            return CLEAN + (" for what is modelled (see above)" if unknown else "") + said
        gloo = sum(not f.nccl_only for f in self.problems)
        n = len(self.problems)
        return (f"{n} problem{'s' if n > 1 else ''}: "
                f"{gloo} on gloo, {n - gloo} more predicted on NCCL{said}")

    def kinds(self) -> set:
        return {f.kind for f in self.findings}

    def by_kind(self, kind) -> list:
        return [f for f in self.findings if f.kind == kind]

    def __str__(self):
        return self.text()
