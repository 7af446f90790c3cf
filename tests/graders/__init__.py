"""Graders: one file per lesson, one test per exercise. `make check` runs this folder
against your labs/ (`--impl=labs`); CI runs it against solutions/. To add a lesson's
grader, copy template.py to test_<module>.py."""
