"""Measuring helpers: whole-process wall time and peak RSS, percentiles."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_rss_mb: float
    returncode: int


def run_process(argv: list[str], **kwargs) -> Run:
    """Wall time and the child's own peak RSS (os.wait4 gives that child's rusage)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, **kwargs)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(seconds, usage.ru_maxrss / 1024, proc.returncode)


def compile_bytecode() -> None:
    """Compile pcscope's modules once, as `pip install` does. Python reads bytecode it
    finds even when PYTHONDONTWRITEBYTECODE is set (as on the shared machines), and
    without it every measured start would time the compiler too."""
    import compileall

    import pcscope

    compileall.compile_dir(pcscope.__path__[0], quiet=1)


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def timed(fn, repeat: int, clock=time.perf_counter) -> list[float]:
    """Per-call seconds of ``fn()`` over ``repeat`` calls (``time.process_time``: CPU
    seconds of this process, which a shared machine's load inflates far less)."""
    out = []
    for _ in range(repeat):
        t = clock()
        fn()
        out.append(clock() - t)
    return out
