"""Benchmarks (`make bench`): speed targets and analysis quality, never run by the test suite."""
