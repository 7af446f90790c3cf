"""The launch engine: `launch()` from a cell, the workers it starts, the errors it
raises."""
