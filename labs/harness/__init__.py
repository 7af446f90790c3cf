"""The course's harness: everything that is not a lesson, one job per file."""
