"""Gloo's error text without its C++ source location: the stable part a lesson prints."""


def gloo_message(error) -> str:
    """'[.../unbound_buffer.cc:78] Timed out waiting ...' -> 'Timed out waiting ...'.

    Only the first line: gloo appends context (addresses, a C++ backtrace) that differs
    from run to run.
    """
    text = str(error).split("] ", 1)[-1]
    return text.splitlines()[0] if text else ""
