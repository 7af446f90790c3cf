"""String-valued enumerations whose members carry their display words.

    class Outcome(Words):
        OK = "ok", "OK"
    Outcome.OK == "ok"; f"{Outcome.OK}" == str(Outcome.OK) == "ok"; Outcome.OK.shown == "OK"

A member is its word: it compares, hashes, prints and pickles like the plain string (a
committed notebook output that printed "ok" still prints "ok"), while code names it
(`Outcome.OK`) instead of spelling it. Python 3.10 has no enum.StrEnum, hence this base.
"""
from __future__ import annotations

from enum import Enum


class Words(str, Enum):
    """A member's value is its word; `.shown` is how it is displayed (the word by default)."""

    shown: str

    def __new__(cls, word: str, shown: str = ""):
        member = str.__new__(cls, word)
        member._value_ = word
        member.shown = shown or word
        return member

    # Print, format, compare and hash as the plain word (Enum would say "Outcome.OK").
    __str__ = str.__str__
    __format__ = str.__format__
    __repr__ = str.__repr__
    __hash__ = str.__hash__
