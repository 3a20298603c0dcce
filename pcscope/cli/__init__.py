"""The command line: the composition root that wires core, index and (lazily) the TUI."""
