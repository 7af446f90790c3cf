"""What code running on the ranks uses (lesson modules, solutions, graders' workers,
the launch engine's worker): tracing, exercises, measuring. No matplotlib, no widgets."""
