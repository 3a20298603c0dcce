"""The contract between the engine and the backends: what a call returns (findings,
categories) and the protocol a backend implements. Both sides import it; it imports neither."""
