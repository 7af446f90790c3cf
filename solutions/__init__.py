"""Reference solutions: one module per lab module, one function per exercise stub."""
