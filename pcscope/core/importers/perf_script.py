"""One line of `perf script` text -> a typed sample (shared by the perf and SPE importers).

perf prints a sample's fields in a fixed order whatever the ``-F`` list says:
``[comm] [pid/tid] [cpu] [time:] [period] [event:] [flags] [addr] [data_src |decode|]
[weight] ip [sym[+off]] [(dso)]``. The parser anchors on the event (a ``name:`` token
that is not the time), the trailing ``(dso)`` and the ip (the last hex token followed
only by the symbol), so optional fields may come and go.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

_TIME = re.compile(r"^\d+\.\d+:$")
_CPU = re.compile(r"^\[\d+\]$")
_HEX = re.compile(r"^(?:0x)?[0-9a-fA-F]+$")
_DEC = re.compile(r"^\d+$")
_SYMOFF = re.compile(r"^(.*)\+0x([0-9a-fA-F]+)$")
_NUMBER = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$")
MAX_PERIOD = 2**53     # a larger period is garbage (and would make sums lose precision)
MAX_IP = 2**64 - 1


class BadSample(ValueError):
    """A line that is a sample but holds a value no perf prints (the importer adds the line)."""
_MMAP = re.compile(
    r"PERF_RECORD_MMAP2? .*?\[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|0)[ \]].*?\]:\s+"
    r"(\S+)\s+(.+)$"
)


@dataclass(frozen=True)
class Sample:
    """The fields of one sample line that the importers use (None: not printed)."""

    ip: int
    sym: str | None          # None: not printed or '[unknown]'
    symoff: int | None
    dso: str | None          # as printed, e.g. '/usr/lib/libc.so.6' or '[kernel.kallsyms]'
    period: int | None
    event: str | None
    time: str | None
    cpu: str | None
    flags: str               # the flags words, '' when none
    addr: int | None
    data_src: int | None
    weight: int | None


@dataclass(frozen=True)
class Mapping:
    """An executable mapping from ``--show-mmap-events``: where a DSO's file offset 0 lies."""

    dso: str
    base: int


def parse_mmap(line: str) -> Mapping | None:
    """A PERF_RECORD_MMAP/MMAP2 line of an executable mapping, else None."""
    m = _MMAP.search(line)
    if not m:
        return None
    start, _, pgoff, prot, dso = m.groups()
    if "x" not in prot:
        return None
    return Mapping(dso.strip(), int(start, 16) - int(pgoff, 16))


def _split_dso(text: str) -> tuple[str, str | None]:
    stripped = text.rstrip()
    if not stripped.endswith(")"):
        return stripped, None
    i = stripped.rfind(" (")
    if i < 0:
        return stripped, None
    return stripped[:i], stripped[i + 2:-1]


def _split_sym(sym_text: str) -> tuple[str | None, int | None]:
    if not sym_text or sym_text == "[unknown]":
        return None, None
    m = _SYMOFF.match(sym_text)
    if m and m.group(1):
        name = m.group(1)
        return (None if name == "[unknown]" else name), int(m.group(2), 16)
    return sym_text, None


def _find_ip(tokens: list[str]) -> int | None:
    """Index of the ip: the last token when it is hex (no symbol printed), else the last
    hex token that has the symbol after it."""
    if not tokens:
        return None
    if _HEX.match(tokens[-1]):
        return len(tokens) - 1
    for i in range(len(tokens) - 2, -1, -1):
        if _HEX.match(tokens[i]):
            return i
    return None


def _find_event(tokens: list[str], ip_at: int) -> int | None:
    for i in range(ip_at):
        t = tokens[i]
        if t.endswith(":") and len(t) > 1 and not _TIME.match(t):
            return i
    return None


@dataclass(frozen=True)
class _Middle:
    flags: str
    addr: int | None
    data_src: int | None
    weight: int | None


def _parse_middle(tokens: list[str]) -> _Middle:
    """The fields between the event and the ip: flags, addr, data_src, weight."""
    bar = next((i for i, t in enumerate(tokens) if t.startswith("|")), None)
    weight = data_src = None
    if bar is not None and bar > 0 and _HEX.match(tokens[bar - 1]):
        data_src = int(tokens[bar - 1], 16)
        # The decode (|OP LOAD|LVL L1 hit|…|BLK  N/A) holds no bare decimal: the first
        # one after it is the weight.
        after = [t for t in tokens[bar:] if _DEC.match(t) or _NUMBER.match(t)]
        if after and not _DEC.match(after[0]):
            raise BadSample(f"weight {after[0]!r}: want a whole number of cycles")
        weight = int(after[0]) if after else None
        before = tokens[: bar - 1]
    else:
        before = list(tokens)
        if len(before) >= 2 and _DEC.match(before[-1]) and _HEX.match(before[-2]):
            weight = int(before.pop())
        elif len(before) == 1 and _DEC.match(before[0]):
            weight = int(before.pop())
    addr = None
    if before and _HEX.match(before[-1]) and len(before[-1]) > 2:
        addr = int(before.pop(), 16)
    return _Middle(" ".join(before), addr, data_src, weight)


def fold_callchains(lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """Lines of samples recorded with a call graph (``perf record -g``) carry no ip: perf
    prints it as the first of the tab-indented frames below. Join that frame to its
    sample line and drop the callers; other lines pass through."""
    held: tuple[int, str] | None = None
    for lineno, text in lines:
        if text.startswith("\t"):
            if held is not None:
                yield held[0], f"{held[1].rstrip()} {text.strip()}"
                held = None
            continue
        if held is not None:
            yield held
        held = (lineno, text)
    if held is not None:
        yield held


def parse_sample(line: str) -> Sample | None:
    """A sample line, or None for anything else (callchain frames, blank lines, records
    such as PERF_RECORD_MMAP2, headers)."""
    if not line.strip() or line.startswith("\t") or "PERF_RECORD_" in line:
        return None
    rest, dso = _split_dso(line)
    tokens = rest.split()
    ip_at = _find_ip(tokens)
    if ip_at is None:
        return None
    sym, symoff = _split_sym(" ".join(tokens[ip_at + 1:]))
    ev_at = _find_event(tokens, ip_at)
    event = tokens[ev_at][:-1] if ev_at is not None else None
    head_end = ev_at if ev_at is not None else ip_at
    period = None
    if head_end > 0 and _DEC.match(tokens[head_end - 1]):
        before = tokens[head_end - 2] if head_end >= 2 else ""
        # A decimal right after the time (or first) is the period; after a comm it is a tid.
        if head_end == 1 or _TIME.match(before) or _CPU.match(before) or ev_at is not None:
            period = int(tokens[head_end - 1])
            if not 0 < period <= MAX_PERIOD:
                raise BadSample(f"period {period}: want a whole number from 1 to 2^53")
    elif head_end > 0 and _NUMBER.match(tokens[head_end - 1]):
        raise BadSample(f"period {tokens[head_end - 1]!r}: want a positive whole number")
    time = next((t[:-1] for t in tokens[:head_end] if _TIME.match(t)), None)
    cpu = next((t[1:-1] for t in tokens[:head_end] if _CPU.match(t)), None)
    middle = (_parse_middle(tokens[ev_at + 1: ip_at]) if ev_at is not None
              else _Middle("", None, None, None))
    ip = int(tokens[ip_at], 16)
    if ip > MAX_IP:
        raise BadSample(f"ip {tokens[ip_at]} does not fit in 64 bits")
    return Sample(
        ip=ip, sym=sym, symoff=symoff, dso=dso, period=period,
        event=event, time=time, cpu=cpu, flags=middle.flags, addr=middle.addr,
        data_src=middle.data_src, weight=middle.weight,
    )
