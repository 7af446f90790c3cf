"""Notebook-side tools that views and notebooks import: timelines, widgets, timing
tables."""
