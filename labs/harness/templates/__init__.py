"""Templates a maintainer copies to add lesson NN: lesson.py (the lab module) and
solution.py (its reference bodies); the grader's template is tests/graders/template.py.
tests/harness/test_templates.py proves they work as they are."""
