"""The claims ledger: every behavioural claim the course makes about torch.distributed,
each one a small function that checks it on real gloo workers.

    python -m labs.claims               the table: claim, lesson, holds/BROKEN, observed
    python -m labs.claims --lesson 03   one lesson's claims
    python -m labs.claims --list        the ids and texts, without running anything

In a notebook, the cell that states a claim runs its entry:

    from labs.claims import check
    check("is_completed_stays_false_on_gloo")   # one stable line, or AssertionError

Modules: registry (the @claim decorator, check), common (shared helpers), and the claims
themselves by lesson: p2p (01), batching (02), waiting (03, 08), deadlocks (04, 05),
training (06, 07, 08), online (08: the claims readers meet online), jobs (11), nccl (NCCL
claims: labelled, sourced, not run here).
"""
import importlib
import pkgutil

from labs.claims.registry import CLAIMS, Claim, ClaimResult, check, claim, evaluate, get

# Importing a claim module registers its claims: every module of this package is one,
# found here (a new lesson's claims module needs no list to join the ledger).
_NOT_CLAIMS = {"registry", "common", "__main__"}
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _module not in _NOT_CLAIMS:
        importlib.import_module(f"{__name__}.{_module}")

__all__ = ["CLAIMS", "Claim", "ClaimResult", "check", "claim", "evaluate", "get"]
