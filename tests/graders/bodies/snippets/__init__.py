"""Lesson `snippets`'s bodies, one module per round (the round is the module's name)."""
