"""What a dispatch sequence merges into its opcode: the instructions a flag test adds.

A lean threaded dispatch is an opcode fetch, maybe an extract of the opcode byte, the table
load and the `br`. An interpreter that merges state into the index (a tracing flag reloaded
from the stack, a probe semaphore read through a pointer, `cmp`/`csetm`/`orr` to fold them
in) runs more: those instructions are what "test the flags only where they can change"
removes, so they, not a mispredict penalty, size that advice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pcscope.core.shapes import Op

_FRAME = ("sp", "x29")  # bases of stack reloads: never the bytecode pointer


def merged_into_index(seq: Sequence[Op], reads: Callable[[Op], set[str]],
                      writes: Callable[[Op], tuple[str, ...]]) -> int:
    """How many instructions of a dispatch sequence (``seq``: the `br` first, then the
    instructions its target depends on, walking back) exist only to merge other state into
    the opcode. Zero when the index comes from the opcode alone, or when no opcode fetch (a
    load off a pointer the sequence does not compute, not off the stack) can be told apart."""
    def writer(i: int, reg: str) -> int | None:
        return next((j for j in range(i + 1, len(seq)) if reg in writes(seq[j])), None)

    def closure(i: int) -> set[int]:
        out, todo = set(), [i]
        while todo:
            j = todo.pop()
            if j not in out:
                out.add(j)
                todo += [w for r in reads(seq[j]) if (w := writer(j, r)) is not None]
        return out

    table = writer(0, next(iter(reads(seq[0])), "")) if seq else None
    if table is None or len(seq[table].addr) < 2:
        return 0
    cur = writer(table, seq[table].addr[1])
    # single-source steps from the table index back (an `and #0xff`, a shift) belong to
    # any dispatch; the first instruction combining two registers is where state merges in
    while cur is not None and not seq[cur].load and len(reads(seq[cur])) == 1:
        cur = writer(cur, next(iter(reads(seq[cur]))))
    if cur is None or seq[cur].load:
        return 0
    merged = closure(cur)
    fetches = [j for j in sorted(merged) if seq[j].load and seq[j].addr[:1] and
               seq[j].addr[0] not in _FRAME and writer(j, seq[j].addr[0]) is None]
    if not fetches:
        return 0
    # the opcode and what only extracts it stay; everything else was merged in
    kept = {fetches[0]}
    for j in sorted(merged, reverse=True):  # program order: producers first
        sources = [w for r in reads(seq[j]) if (w := writer(j, r)) is not None]
        if j != cur and sources and all(s in kept for s in sources):
            kept.add(j)
    return len(merged - kept)
