"""The harness (CI only): launch, torchrun, the exercise contract, the templates."""
