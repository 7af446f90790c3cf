"""Lesson 11's job (`jobs.ring_job`): bodies graded under torchrun by
tests/harness/test_graders.py (JOB_WRONG, JOB_RIGHT), one module per round."""
