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
                      writes: Callable[[Op], tuple[str, ...]]) -> frozenset[int]:
    """The positions in a dispatch sequence (``seq``: the `br` first, then the instructions
    its target depends on, walking back) of the instructions that exist only to merge other
    state into the opcode. Empty when the index comes from the opcode alone, or when no
    opcode fetch (a load off a pointer the sequence does not compute, not off the stack) can
    be told apart."""
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
        return frozenset()
    cur = writer(table, seq[table].addr[1])
    # single-source steps from the table index back (an `and #0xff`, a shift) belong to
    # any dispatch; the first instruction combining two registers is where state merges in
    while cur is not None and not seq[cur].load and len(reads(seq[cur])) == 1:
        cur = writer(cur, next(iter(reads(seq[cur]))))
    if cur is None or seq[cur].load:
        return frozenset()
    merged = closure(cur)
    def fetched(j: int) -> bool:
        """A load off a pointer the sequence does not compute, but may step (``add x23,
        x23, #4``: the bytecode pointer moving to the next instruction)."""
        if not seq[j].load or not seq[j].addr[:1] or seq[j].addr[0] in _FRAME:
            return False
        base, at = seq[j].addr[0], writer(j, seq[j].addr[0])
        while at is not None and not seq[at].load and seq[at].steps(base):
            at = writer(at, base)
        return at is None

    fetches = [j for j in sorted(merged) if fetched(j)]
    if not fetches:
        return frozenset()
    # the opcode reaches the merge through extracts only; a flag loaded off a fixed base is
    # a fetch too, but passes a compare and a mask first: the nearest fetch is the opcode
    depth, front = {cur: 0}, [cur]
    while front:  # breadth first: each producer's fewest steps to the merge
        step = []
        for j in front:
            for w in (writer(j, r) for r in reads(seq[j])):
                if w is not None and w not in depth:
                    depth[w] = depth[j] + 1
                    step.append(w)
        front = step
    # the opcode, its address (a pointer step) and what only extracts it stay
    kept = closure(min(fetches, key=lambda j: (depth.get(j, len(seq)), j)))
    for j in sorted(merged, reverse=True):  # program order: producers first
        sources = [w for r in reads(seq[j]) if (w := writer(j, r)) is not None]
        if j != cur and sources and all(s in kept for s in sources):
            kept.add(j)
    return frozenset(merged - kept)
