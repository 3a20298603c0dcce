"""The one compact rendering of evidence that every model prompt uses.

One line per instruction: its ID, its assembly, its share of the profile with the unit,
its pattern IDs, then its simulator (ALP) figures inline with units, only those that
carry information. Between shown instructions a gap marker says how many addresses were
skipped; a marker names each function boundary. Guide sections are whole up to a cap;
a longer one is cut at a sentence and always keeps its "What to try" part.

``LEGEND`` defines every abbreviation once; it belongs in the stable system text, so a
brief spends no tokens on it. The bounded briefs, the ``window`` and ``asm_around`` tool
answers and the legacy full prompt all render through here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pcscope.core.alp import AlpRecord, round_sig
from pcscope.core.ids import pat_id, pc_id
from pcscope.core.workload import Workload

GUIDE_CAP = 1600  # characters of one guide section in a brief (most bundled leaves fit whole)
TRY = "What to try"
INSTRUCTION_BYTES = 4  # AArch64: a PC gap of 4 bytes is the next instruction
SHARE_UNITS = {"cycles": "cyc", "samples": "smp"}
BRANCH_KINDS = {"direct": "b", "conditional": "b.cond", "indirect": "br", "call": "bl",
                "indirect_call": "blr", "return": "ret"}
MEM_RATES = (("l1d_miss", "L1D miss"), ("l2_miss", "L2 miss"), ("llc_miss", "LLC miss"),
             ("tlb_miss", "TLB miss"), ("store_forwarded", "fwd"))
PREDICTED_KINDS = ("conditional", "indirect", "indirect_call")  # mispredict 0% is news
MIN_WAIT = 1.0  # cycles: a wait this short is the pipeline's minimum, not a cost

LEGEND = """\
How evidence reads (one line per instruction, figures separated by two spaces):
  pc:0x…  <assembly>  <share>  [pat:<category>:0x… IDs]  | <ALP figures>
- share: the instruction's part of the whole profile, "%cyc" of all cycles or "%smp" of \
all samples (executions).
- "~ N" between lines: N instructions (by address) not shown; "-- fn:…" a function \
boundary.
- After "|": the simulator's ALP record of that PC, citable as alp:<the same PC>. \
n = executions simulated (left out when the same as on the line above); iw = issue wait \
(issue - dispatch), ex = execute latency (complete - issue), rw = retire wait (retire - \
complete), all in cycles ("c") and shown only above 1 cycle; a branch \
kind (b, b.cond, br, bl, blr, ret) with taken and mispred as % of its executions; a \
memory kind (load, store, atomic, prefetch) with L1D/L2/LLC/TLB miss as % of its \
accesses, fwd = % served by store forwarding, lat = average load-to-use latency in \
cycles. brn/acc: branch executions / memory accesses when they differ from n. A figure \
not shown is zero or not measured; a bare "|" is a record with nothing notable.
- Guide sections appear as guide:<id> "<heading>": text (long ones are cut at a \
sentence, marked "…", and keep their "What to try" part)."""


@dataclass(frozen=True)
class Shown:
    """One instruction as a prompt shows it."""

    pc: int
    asm: str
    share: float
    patterns: tuple[str, ...]  # categories
    alp: AlpRecord | None
    function: str | None  # fn: ID
    mark: str = ""  # ">" for the PC a tool was asked about


def number(x: float) -> str:
    """3 significant digits, no exponent (12.345 -> 12.3, 0.00123 -> 0.00123)."""
    value = round_sig(x)
    return str(int(value)) if value == int(value) and abs(value) >= 1 else f"{value:g}"


def percent(rate: float) -> str:
    """A fraction as a percent of the same 3 significant digits (rounded as a fraction
    first, so it reads back as the rounded fraction)."""
    return f"{number(round_sig(rate) * 100)}%"


def share_text(share: float, basis: str) -> str:
    return f"{percent(share)}{SHARE_UNITS.get(basis, basis)}"


def alp_text(record: AlpRecord, n_above: int | None = None) -> str:
    """The record's informative figures in the fixed compact form of ``LEGEND``
    (``n_above``: the executions shown on the line above, not repeated)."""
    parts = [] if record.iterations == n_above else [f"n {record.iterations}"]
    for name, value in (("iw", record.issue_wait), ("ex", record.execute_latency),
                        ("rw", record.retire_wait)):
        if value is not None and round_sig(value) > MIN_WAIT:
            parts.append(f"{name} {number(value)}c")
    branch = record.branch
    if branch is not None:
        parts.append(BRANCH_KINDS.get(branch.kind, branch.kind))
        if branch.executed is not None and branch.executed != record.iterations:
            parts.append(f"brn {branch.executed}")
        if branch.kind == "conditional" and branch.taken_rate is not None:
            parts.append(f"taken {percent(branch.taken_rate)}")
        rate = branch.mispredict_rate
        if rate is not None and (rate or branch.kind in PREDICTED_KINDS):
            parts.append(f"mispred {percent(rate)}")
    mem = record.mem
    if mem is not None:
        parts.append(mem.kind)
        if mem.accesses is not None and mem.accesses != record.iterations:
            parts.append(f"acc {mem.accesses}")
        for count, label in MEM_RATES:
            value = getattr(mem, count)
            # an L1D figure is shown even at 0% (a load that hits is evidence too)
            if mem.accesses and value is not None and (value or count == "l1d_miss"):
                parts.append(f"{label} {percent(value / mem.accesses)}")
        if mem.avg_latency:
            parts.append(f"lat {number(mem.avg_latency)}c")
    return "  ".join(parts)


def instruction_line(item: Shown, basis: str, n_above: int | None = None) -> str:
    fields = [f"{item.mark}{pc_id(item.pc)}", item.asm, share_text(item.share, basis)]
    fields += [pat_id(c, item.pc) for c in item.patterns]
    line = "  ".join(fields)
    return f"{line}  | {alp_text(item.alp, n_above)}".rstrip() if item.alp is not None \
        else line


def instruction_lines(items: Sequence[Shown], basis: str,
                      first_function: str | None = None) -> list[str]:
    """Lines in address order with gap and function-boundary markers. A boundary before
    the first line is marked only when it differs from ``first_function`` (the header's)."""
    lines: list[str] = []
    previous: Shown | None = None
    for item in items:
        if previous is not None:
            skipped = (item.pc - previous.pc) // INSTRUCTION_BYTES - 1
            if skipped > 0:
                lines.append(f"~ {skipped}")
        function = previous.function if previous is not None else first_function
        if item.function != function and item.function is not None:
            lines.append(f"-- {item.function}")
        # n carries over only from the line right above (never across a marker)
        above = previous.alp.iterations if previous is not None and previous.alp is not None \
            and lines and lines[-1].startswith(pc_id(previous.pc)) else None
        lines.append(instruction_line(item, basis, above))
        previous = item
    return lines


def items_of(workload: Workload, rows: Sequence[int], alp: Callable[[int], AlpRecord | None],
               mark: int | None = None, patterns: Callable[[int], bool] = lambda _r: True
               ) -> list[Shown]:
    """Profile rows as ``Shown`` items (``patterns(row)``: look up its pattern hits)."""
    profile = workload.profile
    out = []
    for r in rows:
        pc = int(profile.pc[r])
        f = int(profile.function[r])
        out.append(Shown(
            pc, profile.asm(r), profile.share(r),
            tuple(workload.patterns.categories_at(pc)) if patterns(r) else (),
            alp(pc), profile.functions[f].id if f >= 0 else None,
            ">" if pc == mark else ""))
    return out


def guide_excerpt(text: str, cap: int = GUIDE_CAP) -> str:
    """The section whole when it fits; else its start cut at a sentence, "…", and its
    "What to try" part (itself cut at a sentence only if it alone passes the cap)."""
    flat = " ".join(text.split())
    if len(flat) <= cap:
        return flat
    at = flat.find(TRY)
    if at < 0:
        return sentences(flat, cap - 2) + " …"
    start = at - 2 if flat[max(0, at - 2):at] == "**" else at
    tail = flat[start:]
    if len(tail) + 2 > cap:
        return "… " + sentences(tail, cap - 4) + " …"
    head = sentences(flat[:start].rstrip(), cap - len(tail) - 3)
    return f"{head} … {tail}" if head else f"… {tail}"


def sentences(text: str, room: int) -> str:
    """The longest start of ``text`` within ``room`` characters ending at a sentence end."""
    if len(text) <= room:
        return text
    cut = text[: room + 1]
    ends = [cut.rfind(p) for p in (". ", "! ", "? ", ".) ")]
    end = max(ends)
    return cut[: end + 1].rstrip() if end > 0 else ""


def guide_line(gid: str, heading: str, text: str, cap: int = GUIDE_CAP) -> str:
    return f'{gid} "{heading}": {guide_excerpt(text, cap)}'
