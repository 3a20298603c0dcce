"""Typed errors. Every error about input names the file and, where it applies, the line."""

from __future__ import annotations


class PcscopeError(Exception):
    """Base of every error the CLI turns into one line and exit code 2."""

    def one_line(self) -> str:
        return str(self)


class InputError(PcscopeError):
    """Malformed input: a file, an optional 1-based line number and what is wrong."""

    def __init__(self, path: str, line: int | None, what: str) -> None:
        self.path = str(path)
        self.line = line
        self.what = what
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.what}"


class UsageError(PcscopeError):
    """A bad option or argument value (not a file problem)."""


class EvidenceError(PcscopeError):
    """An evidence ID that is malformed or does not resolve."""


class ModelCallsFailed(PcscopeError):
    """Every model call of a run failed: the commonest reason and the endpoint asked."""

    def __init__(self, failed: int, reason: str, times: int, endpoint: str) -> None:
        self.failed, self.reason, self.times, self.endpoint = failed, reason, times, endpoint
        super().__init__(self.one_line())

    def one_line(self) -> str:
        return (f"no model call succeeded ({self.failed} failed; {self.times} with: "
                f"{self.reason}); endpoint {self.endpoint}")
