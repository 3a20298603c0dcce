"""pcscope: evidence-first exploration of huge AArch64 workload profiles."""

__version__ = "0.1.0"
