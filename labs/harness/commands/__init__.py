"""Command lines: a lesson's demo (`python -m labs.<lesson>`), your copies of the
lessons (`make lab`, `make reset`), torchrun jobs with a deadline."""
