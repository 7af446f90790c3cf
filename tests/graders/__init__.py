"""Graders: one file per lesson, one test per exercise. `make check` runs this folder
against your labs/ (`--impl=labs`); CI runs it against solutions/. To add a lesson's
grader, copy template.py to test_<module>.py."""
import torch

from labs.harness.grading import rounding_unit


def bf16_sum_tolerance(world_size: int, magnitude=1.0):
    """How far a bfloat16 sum of `world_size` terms may land from the exact sum: n additions
    stay within n * u * sum|x| (u: bfloat16's unit roundoff; magnitude: sum|x|)."""
    return world_size * rounding_unit(torch.bfloat16) * magnitude
