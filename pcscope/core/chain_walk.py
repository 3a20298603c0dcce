"""What one step of a loop-carried load chain does besides the serial load, from the loop's
instructions and exact counts: the concrete levers of a pointer-chase mechanism
(pcscope.core.mechanism_finder reads the chain itself).

- *first reject*: the first conditional branch back into the walk right after a compare of
  a loaded byte or halfword with a register the walk changes on few steps (a candidate
  rejected on its first byte). Its share of the steps is the branch's count less its
  fall-through's. When the next reject does the same to the adjacent byte (addresses equal
  but for an offset of one), the two compares are one halfword compare.
- *extension*: at least EXTENSION_STEPS unrolled compares of two narrow loads, each leaving
  through a block that adds a constant to one register and jumps to one join inside the
  walk (a match extended byte by byte): the walk's own work, counted with it.
- *footprint*: the link's width (``ldrb``/``ldrh``/``ldr w``, or an immediate mask or
  ``ubfx`` on it) bounds how many entries the chain can index; the shift of the chained
  load's index gives the entry size, so their product bounds the table.
- *mask*: a link masked by a register the walk does not write (``and w1, w1, w12``, zlib's
  ``& wmask``) indexes mask + 1 entries: the table's size, of which the link's width is only
  an upper bound. The register is usually loaded before the walk, so its value is not in
  the code; only a constant move before the walk gives the size.
- *second access*: a load other than the chain's whose address comes, through registers, from
  the link a chained load fetched in the same step, combined with a base the chained loads'
  addresses do not use (liblzma's window byte at ``cur - delta``, zlib's
  ``window[cur_match + best_len]``): each step reads a second structure at a random place. A
  load at the link plus a constant reads the node the chain goes to next, not another
  structure, and is not one.
- *reach*: how far that access moves with the link. Along its address path a value is bounded
  by the link's width (``ldrh``: 2^16 values) or by the walk leaving once it reaches a
  register it does not write (``cmp w11, w7`` then ``b.hs`` out, or ``cset`` … ``cbnz`` out:
  liblzma's distance against ``cyclic_size``); times the bytes the address moves per unit
  (the shifts and signs of the copies, adds and subtracts between), that bounds its span.
- *beside*: the other loads the link addresses whose address differs from that access's by a
  constant under a line, or by one register the walk rarely changes plus such a constant
  (zlib's ``match[best_len - 1]``, ``match[0]``): the same or nearby lines, not more random
  places.
- *pair*: two link loads whose addresses are one sum but for a constant one load's width
  apart (the halves of one pair: liblzma's ``pair[0]``/``pair[1]``), each the first load
  on one side of a branch on the second access's value: one wide load and a ``csel`` would
  start the pair's miss before that branch resolves.
- *wrap*: an index the walk wraps at a register R it does not write and compares against
  (``add t, i, R`` + ``csel i, t, i``; ``csel t, R, zr`` + ``add``; or an ``add``/``sub``
  of R a conditional branch skips), as a cyclic buffer's position is, indexes at most R
  entries: R times the index's stride in the chained loads' addresses (liblzma's
  ``cyclic_size``). R is usually an argument or a field, so its value is not in the code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pcscope.core import isa, shapes
from pcscope.core.call_effects import CallEffects
from pcscope.core.chase_values import Beside, PairedLinks, SecondAccess, SecondReach, WrapBound
from pcscope.core.mechanisms import Metric
from pcscope.core.profile import Profile
from pcscope.core.shapes import NARROW_LOADS, Op

RARE = 0.1  # an input written on at most this share of an instruction's runs is "fixed"
EXTENSION_STEPS = 4  # unrolled compare steps with per-step exits that make an extension
LOOK_BACK = 12  # instructions looked back to resolve an address or find a compare's load
REJECT = "first reject: "  # check prefixes (the advice reads ChaseValues.reject, .paired)
PAIRED = "the next reject compares the adjacent byte: "
EXTENDS = "unrolled compare steps with per-step exits extend each candidate: "
MASKED = "the link is masked by a register the walk does not write: "
LOOK_BEFORE = 64  # rows looked back from the walk for what sets its mask register
_WIDTH = {"ldrb": 8, "ldurb": 8, "ldrh": 16, "ldurh": 16}
_COPIES = frozenset(("mov", "sxtw", "uxtw"))  # the same value (an index) in another form
_SHIFT = re.compile(r"lsl #(\d+)\]$")
_SCALED = re.compile(r"(?:lsl|[su]xt[wx]) #(\d+)")  # an index operand's shift
_COMPARES = frozenset(("cmp", "ccmp", "subs"))
WRAPPED = "the link's index wraps at a register the walk does not write: "
SECOND = "a second random access per step, addressed by the link loaded in the same step: "
_FRAME = ("sp", "x29")
LINE = 64  # bytes of a cache line: loads closer than this read the same or the next line
_LEAVES_BELOW = {0: frozenset(("hs", "cs")), 1: frozenset(("ls",))}  # per side of the value


@dataclass(frozen=True)
class Walk:
    """The levers one chain loop shows."""

    reject: int | None  # the first reject's compare row
    rejected: float  # of the steps reaching that compare, the share it rejects
    paired: int | None  # the next reject's compare row, when it reads the adjacent byte
    extension: tuple[int, ...]  # the extension's rows with its exit blocks
    extension_steps: int
    extension_bytes: float  # byte compares of the extension per entry into it
    link_bits: int | None  # the width that bounds the link, when it is narrower than 32
    entry_bytes: int  # the size of one indexed entry (from the index's shift)
    # second accesses, hottest first: each the load's row, then its path back to the chained
    # load whose link addresses it (that load last)
    second: tuple[tuple[int, ...], ...] = ()
    also_from: tuple[int, ...] = ()  # other links addressing the first one (other paths)
    branched: int | None = None  # the compare of the first one's value before a branch
    reach: Reach | None = None  # how far the first one moves with the link
    # other second accesses near the first one: (row, register spelled or "", sign, offset)
    beside: tuple[tuple[int, str, int, int], ...] = ()
    pair: Pair | None = None


@dataclass(frozen=True)
class Reach:
    """A value on the second access's address path, bounded, and its bytes per unit."""

    value: int  # the row writing it (the chained load, for a width)
    register: str  # as spelled
    stride: int
    bits: int | None  # its width, when that bounds it
    bound: str | None  # else the register the walk leaves at, as spelled
    compare: int | None  # the compare against ``bound``
    offsets: tuple[str, ...]  # the access's other address registers the walk writes


@dataclass(frozen=True)
class Pair:
    """Two links reading the halves of one pair, chosen by a branch."""

    halves: tuple[int, int]  # the branch target's load, the fall-through's
    size: int
    branch: int


class _Reader:
    def __init__(self, profile: Profile, op: Callable[[int], Op], rows: list[int],
                 joins: frozenset[int]) -> None:
        self.p, self.op, self.rows, self.joins = profile, op, rows, joins
        self.inside = set(rows)
        # what each row may change: a call also what its callee may (call_effects)
        self.changes = CallEffects(profile, op).changes
        # the rows of the walk jumping to each pc, and _defs' answers: asked per row, per
        # register and per pass, they were found anew by scanning every row (an interpreter's
        # walk of thousands of rows took minutes)
        self.jumps_to: dict[int, list[int]] = {}
        for row in rows:
            target = op(row).target
            if target is not None:
                self.jumps_to.setdefault(target, []).append(row)
        self.defs: dict[tuple[int, str], frozenset[int]] = {}
        self.writes: dict[str, int] = {}  # per register: the most runs of a row writing it
        for row in rows:
            for reg in self.changes(row):
                self.writes[reg] = max(self.writes.get(reg, 0), self.count(row))

    def count(self, row: int) -> int:
        return int(self.p.samples[row])

    def rare(self, reg: str, runs: int) -> bool:
        """The walk writes ``reg`` on at most RARE of ``runs`` (or never)."""
        return self.writes.get(reg, 0) <= RARE * runs

    def writer(self, row: int, reg: str) -> int | None:
        """What last sets ``reg`` before ``row`` (shapes.setter over the walk's LOOK_BACK
        rows before it, in address order)."""
        return shapes.setter(self.op, range(row - 1, max(self.rows[0], row - LOOK_BACK) - 1, -1),
                             reg, int(self.p.pc[row]), self.changes)

    def compared_load(self, branch: int) -> tuple[int, str] | None:
        """For ``cmp a, b; b.cond``: the narrow load of one side and the other register."""
        cmp = self.op(branch - 1)
        if cmp.mnemonic != "cmp" or len(cmp.src) != 2:
            return None
        for mine, other in (cmp.src, cmp.src[::-1]):
            load = self.writer(branch - 1, mine)
            if load is not None and self.op(load).mnemonic in NARROW_LOADS:
                return load, other
        return None

    def address(self, row: int) -> tuple[tuple[tuple[str, int | None], ...], int]:
        """The load's address as the registers it adds up (each with the row that wrote it,
        None when written before the look-back) and a constant offset."""
        o = self.op(row)
        text = next((x for x in o.operands if x.startswith("[")), "[]")
        parts = [p.strip() for p in text.strip("[]!").split(",")]
        offset = int(parts[1].lstrip("#"), 0) if len(parts) == 2 and parts[1].startswith("#") \
            else 0
        leaves: list[tuple[str, int | None]] = []
        for reg in o.addr:
            offset += self._expand(row, reg, leaves, depth=0)
        return tuple(sorted(leaves, key=str)), offset

    def _expand(self, row: int, reg: str, leaves: list[tuple[str, int | None]],
                depth: int) -> int:
        w = self.writer(row, reg)
        if w is None or depth > 4 or self.op(w).load:
            leaves.append((reg, w))
            return 0
        o = self.op(w)
        imm = o.operands[2] if len(o.operands) == 3 else ""
        if o.mnemonic in _COPIES and len(o.src) == 1:
            return self._expand(w, o.src[0], leaves, depth + 1)
        if o.mnemonic in ("add", "sub") and len(o.src) == 1 and imm.startswith("#"):
            step = int(imm.lstrip("#"), 0)
            return self._expand(w, o.src[0], leaves, depth + 1) + \
                (step if o.mnemonic == "add" else -step)
        if o.mnemonic == "add" and len(o.src) == 2 and len(o.operands) == 3:
            return self._expand(w, o.src[0], leaves, depth + 1) + \
                self._expand(w, o.src[1], leaves, depth + 1)
        leaves.append((reg, w))
        return 0


def read(profile: Profile, op: Callable[[int], Op], rows: list[int], keys: tuple[int, ...],
         joins: frozenset[int]) -> Walk:
    """The levers of the chain loop made of ``rows`` (address order) whose chained loads are
    ``keys``; ``joins`` are the PCs some branch jumps to."""
    r = _Reader(profile, op, rows, joins)
    rejects = _rejects(r)
    reject, rejected, paired = None, 0.0, None
    if rejects:
        reject = rejects[0] - 1
        after = rejects[0] + 1
        runs = r.count(rejects[0])
        if runs and after in r.inside and int(profile.pc[after]) not in joins:
            rejected = round(1.0 - r.count(after) / runs, 3)
        if len(rejects) > 1 and _adjacent(r, rejects[0], rejects[1]):
            paired = rejects[1] - 1
    steps, bits, entry = _extension(r), *_footprint(r, keys)
    second, others = _second_accesses(r, keys)
    branched = _branched_on(r, second[0][0]) if second else None
    return Walk(reject, rejected, paired, steps[0], steps[1], steps[2], bits, entry, second,
                others, branched, _reach(r, second[0]) if second else None,
                _beside(r, second), _pair(r, keys, second[0][0]) if second else None)


def _trace(r: _Reader, row: int, regs: tuple[str, ...], keys: tuple[int, ...],
           depth: int = 0) -> tuple[tuple[int, ...] | None, frozenset[str]]:
    """Where the value of ``regs`` at ``row`` comes from (writers in address order, within
    LOOK_BACK each): the rows of one path to a chained load (that load last), or None, and the
    registers it combines from elsewhere (loaded by another load, or set before the rows
    read): its bases."""
    path: tuple[int, ...] | None = None
    bases: set[str] = set()
    for reg in regs:
        w = r.writer(row, reg)
        if w is not None and w in keys:
            path = path or (w,)
        elif w is None or r.op(w).load or depth > 6:
            bases.add(reg)
        else:
            sub, more = _trace(r, w, r.op(w).src, keys, depth + 1)
            bases |= more
            if sub is not None and path is None:
                path = (w, *sub)
    return path, frozenset(bases)


def _addressed(r: _Reader, load: int) -> frozenset[int]:
    """The loads of the walk (``load`` itself included, in the next step) whose address the
    value ``load`` fetches reaches through registers: a link's are not empty."""
    rows, reached = {load}, set[int]()
    for _ in range(4):  # until nothing new: a few passes reach the next step's uses
        before = len(rows), len(reached)
        for row in r.rows:
            o = r.op(row)
            if o.load and not isa.is_prefetch(o.mnemonic) and \
                    any(rows & _defs(r, row, reg) for reg in o.addr):
                reached.add(row)
            if not o.load and o.dest and any(rows & _defs(r, row, reg) for reg in o.src):
                rows.add(row)
        if (len(rows), len(reached)) == before:
            break
    return frozenset(reached)


_OUTSIDE = -1  # a definition before the walk's rows


def _defs(r: _Reader, row: int, reg: str) -> frozenset[int]:
    """The rows whose write of ``reg`` may reach ``row``'s read of it: back in address order
    to the nearest join, then from the row falling into the join and every branch of the walk
    jumping to it (_OUTSIDE for a value from before the walk's rows)."""
    if (row, reg) not in r.defs:
        r.defs[row, reg] = _reaching_defs(r, row, reg)
    return r.defs[row, reg]


def _reaching_defs(r: _Reader, row: int, reg: str) -> frozenset[int]:
    """_defs, found."""
    out: set[int] = set()
    seen: set[int] = set()
    todo = [row]
    while todo:
        q = todo.pop()
        while int(r.p.pc[q]) not in r.joins and q - 1 in r.inside:
            q -= 1
            if reg in r.changes(q):
                out.add(q)
                break
        else:
            if int(r.p.pc[q]) not in r.joins:
                out.add(_OUTSIDE)
                continue
            preds = list(r.jumps_to.get(int(r.p.pc[q]), ()))
            if q - 1 in r.inside and not isa.ends_flow(r.op(q - 1).mnemonic):
                preds.append(q - 1)
            elif q - 1 not in r.inside and (q == 0 or not isa.ends_flow(r.op(q - 1).mnemonic)):
                out.add(_OUTSIDE)  # the row before the walk falls into it (a `b` does not)
            for b in preds:
                if b in seen:
                    continue
                seen.add(b)
                if reg in r.changes(b):
                    out.add(b)
                else:
                    todo.append(b)
    return frozenset(out)


def _second_accesses(r: _Reader, keys: tuple[int, ...]
                     ) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    """The walk's loads that are no link (their value addresses nothing), not off the stack,
    addressed by a link of the same step with a base no link's address uses, hottest first;
    and the other links whose value reaches the first one's address (on other paths)."""
    addressed = {k: _addressed(r, k) for k in keys}
    links = tuple(k for k in keys if addressed[k])
    chain_bases = {b for k in links for b in _trace(r, k, r.op(k).addr, links)[1]}
    found = []
    for row in r.rows:
        o = r.op(row)
        if not o.load or row in links or isa.is_prefetch(o.mnemonic) or o.addr[:1] == () or \
                o.addr[0] in _FRAME:
            continue
        path, bases = _trace(r, row, o.addr, links)
        if path is not None and bases - chain_bases:
            found.append((row, *path))
    ranked = tuple(sorted(found, key=lambda p: (-r.count(p[0]), p[0])))
    others = tuple(k for k in links if ranked and k != ranked[0][-1] and
                   ranked[0][0] in addressed[k])
    return ranked, others


def _branched_on(r: _Reader, load: int) -> int | None:
    """The compare of ``load``'s value that a conditional branch right after it reads."""
    value = r.op(load).dest[:1]
    return next((row for row in r.rows if row > load and value and value[0] in r.op(row).src
                 and r.op(row).mnemonic in _COMPARES and row + 1 in r.inside
                 and isa.is_conditional_branch(r.op(row + 1).mnemonic)), None)


_Sum = tuple[list[tuple[str, int]], int]  # (register, factor) terms and a constant
_Key = tuple[str, frozenset[int]]  # a register and the rows whose writes of it reach the read


def _imm(text: str) -> int | None:
    return int(text.lstrip("#"), 0) if re.fullmatch(r"#-?(0x[0-9a-f]+|\d+)", text) else None


def _sum(o: Op) -> _Sum | None:
    """``o``'s result (a load's: its address) as a sum of its source registers times
    factors plus a constant: copies, adds and subtracts (an operand shifted left or
    extended), left shifts and ``ubfiz`` (its width mask taken as no change: indices are
    far below 2^31); None for anything else."""
    ops, m = o.operands, o.mnemonic
    if o.load:
        text = next((x for x in ops if x.startswith("[")), None)
        parts = [p.strip() for p in (text or "").strip("[]!").split(",")]
        base = isa.parse_register(parts[0])
        if base is None or len(parts) > 3:
            return None
        if len(parts) == 1 or _imm(parts[1]) is not None:
            return [(base, 1)], (_imm(parts[1]) or 0) if len(parts) > 1 else 0
        index, scaled = isa.parse_register(parts[1]), _SCALED.search(parts[-1])
        return None if index is None else \
            ([(base, 1), (index, 1 << (int(scaled.group(1)) if scaled else 0))], 0)
    if m in _COPIES and len(o.src) == 1 and len(ops) == 2:
        return [(o.src[0], 1)], 0
    if m in ("lsl", "ubfiz") and len(o.src) == 1 and len(ops) >= 3 and _imm(ops[2]):
        return [(o.src[0], 1 << (_imm(ops[2]) or 0))], 0
    if m not in ("add", "sub") or len(ops) not in (3, 4):
        return None
    sign, a = (1 if m == "add" else -1), isa.parse_register(ops[1])
    shift = _SCALED.search(ops[3]) if len(ops) == 4 else None
    if a is None or (len(ops) == 4 and not shift and ops[3] not in ("uxtw", "sxtw", "uxtx",
                                                                     "sxtx")):
        return None
    k = int(shift.group(1)) if shift else 0
    if _imm(ops[2]) is not None:
        return [(a, 1)], sign * ((_imm(ops[2]) or 0) << k)
    b = isa.parse_register(ops[2])
    return None if b is None else ([(a, 1), (b, sign << k)], 0)


def _linear(r: _Reader, row: int, depth: int = 0) -> tuple[dict[_Key, int], int]:
    """The value ``row`` writes (a load's: its address) as a sum of leaves times factors
    plus a constant, each source followed back through its one reaching definition while
    that is a sum. A leaf is a value the walk cannot add up: loaded, chosen (``csel``),
    from several definitions, or in a register the walk rarely writes (an offset, one leaf
    wherever read)."""
    found = _sum(r.op(row))
    if found is None:
        return {}, 0
    terms, const = found
    out: dict[_Key, int] = {}
    for reg, factor in terms:
        if reg == "xzr":
            continue
        defs = _defs(r, row, reg)
        (only,) = defs if len(defs) == 1 else (None,)
        fixed = r.rare(reg, r.count(row))
        if only is not None and only != _OUTSIDE and not fixed and depth < 8 and \
                not r.op(only).load and _sum(r.op(only)) is not None:
            sub, c = _linear(r, only, depth + 1)
        else:
            sub, c = {(reg, frozenset() if fixed else defs): 1}, 0
        const += factor * c
        for key, f in sub.items():
            out[key] = out.get(key, 0) + factor * f
    return {k: f for k, f in out.items() if f}, const


def _spelled(r: _Reader, rows: tuple[int, ...], reg: str) -> str:
    """``reg`` as ``rows`` spell it (``w7`` for x7)."""
    for row in rows:
        for text in r.op(row).operands:
            for token in text.strip("[]!").split(","):
                if isa.parse_register(token.strip()) == reg:
                    return token.strip()
    return reg


def _reach(r: _Reader, path: tuple[int, ...]) -> Reach | None:
    """The value nearest the link on the second access's path (``path``: the load, the rows
    back to the link's load) that a width or an exit bounds, with its bytes per unit of it
    in the load's address; None when nothing does or a step is no sum."""
    load = path[0]
    stride, strides = 1, {}
    for near, far in zip(path, path[1:], strict=False):
        found = _sum(r.op(near))
        factors = [f for reg, f in found[0] if reg in r.op(far).dest] if found else []
        if len(factors) != 1:
            break
        stride *= factors[0]
        strides[far] = stride
    # the access's other address registers that are offsets, not its base: written by the
    # walk, or a 32-bit index (extended, so no pointer)
    on_path = {reg for row in path[1:] for reg in r.op(row).dest}
    offsets = tuple(_spelled(r, (load,), reg) for reg in r.op(load).addr if reg not in on_path
                    and (r.writes.get(reg, 0) or _spelled(r, (load,), reg).startswith("w")))
    for row in reversed(path[1:]):
        if row not in strides:
            continue
        o = r.op(row)
        value = o.loaded[:1] if row == path[-1] else o.dest[:1]
        if not value:
            continue
        bits = _WIDTH.get(o.mnemonic) if row == path[-1] else None
        exit_at = None if bits else _exit_bound(r, row, value[0])
        if bits or exit_at is not None:
            bound = None if exit_at is None else \
                _spelled(r, (exit_at,), *(reg for reg in r.op(exit_at).src if reg != value[0]))
            return Reach(row, _spelled(r, (row,), value[0]), strides[row], bits, bound,
                         exit_at, offsets)
    return None


def _exit_bound(r: _Reader, row: int, value: str) -> int | None:
    """The compare right after ``row`` of ``value`` with a register the walk does not write,
    when the walk leaves unless ``value`` is below that register: a conditional branch out
    on it, or its ``cset`` (``orr``ed with other exits) tested by a ``cbnz`` out or a
    ``cbz`` back whose fall-through leaves."""
    for cmp in range(row + 1, min(row + 4, r.rows[-1] + 1)):
        o = r.op(cmp)
        if value in o.dest:
            return None
        other = [reg for reg in o.src if reg != value]
        if o.mnemonic == "cmp" and len(o.src) == 2 and len(other) == 1 and \
                not r.writes.get(other[0], 0) and \
                _leaves_on(r, cmp, _LEAVES_BELOW[o.src.index(value)]):
            return cmp
    return None


def _leaves_on(r: _Reader, cmp: int, conds: frozenset[str]) -> bool:
    """The walk leaves when the flags ``cmp`` sets meet one of ``conds``."""
    nxt = r.op(cmp + 1) if cmp + 1 in r.inside else None
    if nxt is None:
        return False
    if isa.is_conditional_branch(nxt.mnemonic):
        return nxt.mnemonic.split(".")[-1] in conds and _outside(r, nxt.target)
    if nxt.mnemonic != "cset" or len(nxt.operands) != 2 or nxt.operands[1] not in conds:
        return False
    flag = {nxt.dest[0]}
    for row in range(cmp + 2, min(cmp + 2 + LOOK_BACK, r.rows[-1] + 1)):
        o = r.op(row)
        if o.mnemonic == "orr" and flag & set(o.src):
            flag = set(o.dest)
        elif o.mnemonic in ("cbnz", "cbz") and flag & set(o.src):
            return _outside(r, o.target) if o.mnemonic == "cbnz" else \
                not _outside(r, o.target) and row + 1 not in r.inside
        elif flag & set(o.dest) or isa.is_branch(o.mnemonic):
            return False
    return False


def _outside(r: _Reader, pc: int | None) -> bool:
    row = r.p.row_of(pc) if pc is not None else None
    return row is None or row not in r.inside


def _beside(r: _Reader, second: tuple[tuple[int, ...], ...]
            ) -> tuple[tuple[int, str, int, int], ...]:
    """The other second accesses whose address is the first one's plus a constant under a
    line, or plus or less one rarely written register and such a constant."""
    if len(second) < 2:
        return ()
    first, c0 = _linear(r, second[0][0])
    out = []
    for path in second[1:]:
        terms, c = _linear(r, path[0])
        diff = {k: terms.get(k, 0) - first.get(k, 0) for k in {*terms, *first}}
        diff = {k: f for k, f in diff.items() if f}
        if abs(c - c0) >= LINE or len(diff) > 1 or \
                any(abs(f) != 1 or keys for (_reg, keys), f in diff.items()):
            continue
        (reg, _keys), sign = next(iter(diff.items()), (("", frozenset()), 0))
        out.append((path[0], _spelled(r, (second[0][0], path[0], *second[0][1:]), reg)
                    if reg else "", sign, c - c0))
    return tuple(out)


def _pair(r: _Reader, keys: tuple[int, ...], second: int) -> Pair | None:
    """Two chained loads (``keys``), each the first load on one side of a conditional branch
    on ``second``'s value, whose addresses are one sum but for constants one load's width
    apart."""
    value = r.op(second).dest[:1]
    for branch in r.rows:
        o = r.op(branch)
        cmp = r.op(branch - 1)
        if not value or not isa.is_conditional_branch(o.mnemonic) or \
                cmp.mnemonic not in _COMPARES or value[0] not in cmp.src or \
                _defs(r, branch - 1, value[0]) != {second} or o.target is None:
            continue
        taken = _first_link(r, r.p.row_of(o.target), keys)
        fall = _first_link(r, branch + 1, keys)
        if taken is None or fall is None or taken == fall:
            continue
        width = _bytes_loaded(r.op(taken))
        (a, ca), (b, cb) = _linear(r, taken), _linear(r, fall)
        if a and a == b and width and width == _bytes_loaded(r.op(fall)) and \
                abs(ca - cb) == width:
            return Pair((taken, fall), 2 * width, branch)
    return None


def _first_link(r: _Reader, row: int | None, keys: tuple[int, ...]) -> int | None:
    """The first load from ``row`` on, before any branch, when it is a chained load."""
    while row is not None and row in r.inside:
        o = r.op(row)
        if o.load:
            return row if row in keys else None
        if isa.is_branch(o.mnemonic):
            return None
        row += 1
    return None


def _bytes_loaded(o: Op) -> int | None:
    if o.mnemonic in ("ldrb", "ldurb", "ldrh", "ldurh"):
        return _WIDTH[o.mnemonic] // 8
    if o.mnemonic in ("ldr", "ldur") and len(o.loaded) == 1:
        return 8 if o.operands[0].startswith("x") else 4 if o.operands[0].startswith("w") \
            else None
    return None


def _rejects(r: _Reader) -> list[int]:
    """From the first conditional branch back into the walk, the run of such branches (to
    one target, no other conditional branch between) that each follow a compare of a
    narrow load with a register the walk rarely changes; empty when the first is not one."""
    out: list[int] = []
    for row in r.rows:
        o = r.op(row)
        if not isa.is_conditional_branch(o.mnemonic):
            continue
        to = r.p.row_of(o.target) if o.target is not None else None
        if to not in r.inside and not out:
            continue  # leaves the walk (a limit or the budget), before any reject
        side = r.compared_load(row)
        if to not in r.inside or side is None or not r.rare(side[1], r.count(row)) or \
                (out and r.op(out[0]).target != o.target):
            break
        out.append(row)
    return out


def _adjacent(r: _Reader, first: int, second: int) -> bool:
    """The two rejects' loads read bytes one apart from the same computed address."""
    a, b = r.compared_load(first), r.compared_load(second)
    if a is None or b is None or {r.op(a[0]).mnemonic[-1], r.op(b[0]).mnemonic[-1]} != {"b"}:
        return False
    (leaves_a, off_a), (leaves_b, off_b) = r.address(a[0]), r.address(b[0])
    return leaves_a == leaves_b and abs(off_a - off_b) == 1


def _extension(r: _Reader) -> tuple[tuple[int, ...], int, float]:
    """The unrolled compare steps whose exits each add a constant to one register and jump
    to one join inside the walk: their rows (span, the loop closing it, the exit blocks),
    the number of steps and byte compares per entry."""
    groups: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for row in r.rows:
        o = r.op(row)
        exit_row = r.p.row_of(o.target) if o.target is not None else None
        if not isa.is_conditional_branch(o.mnemonic) or exit_row is None or \
                exit_row in r.inside or exit_row + 1 >= len(r.p):
            continue
        step, jump = r.op(exit_row), r.op(exit_row + 1)
        join = r.p.row_of(jump.target) if jump.target is not None else None
        cmp = r.op(row - 1)
        loads = [w for reg in cmp.src if (w := r.writer(row - 1, reg)) is not None
                 and r.op(w).mnemonic in NARROW_LOADS]
        if jump.mnemonic == "b" and join in r.inside and len(loads) == 2 and \
                step.mnemonic == "add" and len(step.dest) == 1 and step.steps(step.dest[0]):
            groups.setdefault((step.dest[0], join), []).append((row, exit_row))
    best = max(groups.values(), key=len, default=[])
    if len(best) < EXTENSION_STEPS:
        return (), 0, 0.0
    top = best[0][0] - 1  # the first step's compare
    first = min(w for reg in r.op(top).src if (w := r.writer(top, reg)) is not None)
    last = best[-1][0]
    # the loop closing the unrolled span: a backward branch into it right after
    closing = next((q for q in range(last + 1, min(r.rows[-1], last + LOOK_BACK) + 1)
                    if (t := r.op(q).target) is not None and
                    int(r.p.pc[first]) <= t <= int(r.p.pc[last])), last)
    span = list(range(first, closing + 1))
    exits = [q for _, e in best for q in (e, e + 1)]
    # every compare of two loaded bytes: the last step's may feed a `ccmp` (zlib's loop
    # test folded into it), not a branch of its own
    compares = sum(r.count(row) for row in span if r.op(row).mnemonic == "cmp" and len([
        w for reg in r.op(row).src if (w := r.writer(row, reg)) is not None
        and r.op(w).mnemonic in NARROW_LOADS]) == 2)
    # entries: the runs of a plain instruction falling into the span when only the span's
    # own loop jumps back to it, else its first row's runs less the closing loop's reruns
    before = first - 1
    others = [q for q in r.rows if r.op(q).target == int(r.p.pc[first])
              and not first <= q <= closing]
    entries = r.count(before) if before in r.inside and not others and \
        not isa.is_branch(r.op(before).mnemonic) else \
        r.count(first) - (r.count(closing) if closing != last else 0)
    per_entry = round(compares / entries, 2) if entries > 0 else 0.0
    return tuple(sorted({*span, *exits})), len(best), per_entry


def _footprint(r: _Reader, keys: tuple[int, ...]) -> tuple[int | None, int]:
    """The bits bounding the chain's link (None when 32 or more) and the indexed entry size."""
    key = keys[0]
    o = r.op(key)
    bits = _WIDTH.get(o.mnemonic, 64 if o.operands[0].startswith("x") else 32)
    index = o.addr[1] if len(o.addr) > 1 else None
    for row in r.rows:
        m = r.op(row)
        if index is None or m.dest != (index,):
            continue
        if m.mnemonic == "and" and len(m.operands) == 3 and m.operands[2].startswith("#"):
            mask = int(m.operands[2].lstrip("#"), 0)
            if mask and mask & (mask + 1) == 0:
                bits = min(bits, mask.bit_length())
        elif m.mnemonic == "ubfx" and len(m.operands) == 4 and m.operands[2] in ("#0", "#0x0"):
            bits = min(bits, int(m.operands[3].lstrip("#"), 0))
    shift = _SHIFT.search(next((x for x in o.operands if x.startswith("[")), ""))
    entry = 1 << int(shift.group(1)) if shift else (_WIDTH.get(o.mnemonic, 32) // 8
                                                    if index else 0)
    return (bits if bits < 32 and index is not None else None), entry


def metrics(walk: Walk, extension_share: float) -> list[Metric]:
    out = []
    if walk.reject is not None and walk.rejected:
        out.append(Metric("rejected at the first compare", round(100.0 * walk.rejected, 1),
                          "%", "(first reject branch count - its fall-through count) / its "
                          "count"))
    if walk.extension:
        out += [Metric("extension steps", walk.extension_steps, "steps",
                       "unrolled compare steps with per-step exits"),
                Metric("extension bytes per entry", walk.extension_bytes, "x",
                       "byte compares of the extension / entries into it"),
                Metric("extension share", round(100.0 * extension_share, 3), "%",
                       "the extension's instructions (with its exits) / the total")]
    if walk.link_bits is not None:
        out += [Metric("link bits", walk.link_bits, "bits",
                       "width bounding the link (load width, immediate mask or ubfx)"),
                Metric("table bound", (1 << walk.link_bits) * walk.entry_bytes, "bytes",
                       "2^link bits x the indexed entry size")]
    return out


def rejects(walk: Walk, asm: Callable[[int], str],
            pc: Callable[[int], int]) -> tuple[str | None, str | None]:
    """The first reject (when it rejects any step) and the next reject comparing the
    adjacent byte, each as its check and the advice say it (```ldrb w3, [x1]` at 0x1000``)."""
    def at(row: int | None) -> str | None:
        return None if row is None else f"`{asm(row)}` at {pc(row):#x}"
    return at(walk.reject) if walk.rejected else None, at(walk.paired)


def checks(walk: Walk, asm: Callable[[int], str], pc: Callable[[int], int]) -> list[str]:
    def at(row: int) -> str:
        return f"`{asm(row)}` at {pc(row):#x}"
    first, paired = rejects(walk, asm, pc)
    out = ([REJECT + first] if first else []) + ([PAIRED + paired] if paired else [])
    if walk.extension:
        out.append(EXTENDS + f"{walk.extension_steps} steps from {pc(walk.extension[0]):#x}")
    second = second_value(walk, asm, pc)
    if second is not None:
        via = f" through {', '.join(second.through)}" if second.through else ""
        via += f" (on other paths from {', '.join(second.others)})" if second.others else ""
        on = f"; its value is branched on ({at(walk.branched)})" if walk.branched is not None \
            else ""
        more = f"; also {', '.join(second.also)}" if second.also else ""
        out.append(f"{SECOND}{second.load}, from {second.key}{via}{on}{more}")
    return out


def second_value(walk: Walk, asm: Callable[[int], str],
                 pc: Callable[[int], int]) -> SecondAccess | None:
    """The hottest second access as the advice names it (None: the walk makes none)."""
    if not walk.second:
        return None

    def at(row: int) -> str:
        return f"`{asm(row)}` at {pc(row):#x}"
    load, *through, key = walk.second[0]
    return SecondAccess(at(load), at(key), tuple(at(q) for q in reversed(through)),
                        tuple(at(k) for k in walk.also_from),
                        None if walk.branched is None else f"`{asm(walk.branched)}`",
                        tuple(at(p[0]) for p in walk.second[1:]))


@dataclass(frozen=True)
class Mask:
    """The chain's link masked by a register the walk does not write."""

    row: int  # the ``and``
    setter: int | None  # the row before the walk that sets the register, if found
    value: int | None  # the mask, when that row moves a constant into it


def masked(profile: Profile, op: Callable[[int], Op], rows: list[int],
           keys: tuple[int, ...]) -> Mask | None:
    """The mask on the index of the chain's first load (``and`` with one register the walk
    does not write), with what sets that register before the walk (shapes.setter over the
    function's LOOK_BEFORE rows before it); None when the index is not masked that way."""
    index = op(keys[0]).addr[1:2]
    changes = CallEffects(profile, op).changes
    written = {reg for row in rows for reg in changes(row)}
    for row in rows:
        o = op(row)
        fixed = [reg for reg in o.src if reg not in written]
        if o.mnemonic != "and" or o.dest != index or len(o.src) != 2 or len(fixed) != 1:
            continue
        setter = shapes.setter(op, profile.rows_before(rows[0], LOOK_BEFORE), fixed[0],
                               int(profile.pc[max(rows)]), changes)
        return Mask(row, setter, None if setter is None else shapes.constant(profile.asm(setter)))
    return None


def mask_metrics(mask: Mask | None, entry_bytes: int) -> list[Metric]:
    if mask is None or mask.value is None or not entry_bytes:
        return []
    return [Metric("table size", (mask.value + 1) * entry_bytes, "bytes",
                   "(the link's mask + 1) x the indexed entry size")]


def mask_checks(mask: Mask | None, asm: Callable[[int], str],
                pc: Callable[[int], int]) -> list[str]:
    if mask is None:
        return []
    return [MASKED + _mask_said(mask, lambda row: f"`{asm(row)}` at {pc(row):#x}")]


def mask_value(mask: Mask | None, asm: Callable[[int], str]) -> str | None:
    """The mask as the advice names it: the check's words without the PCs."""
    return None if mask is None else _mask_said(mask, lambda row: f"`{asm(row)}`")


def _mask_said(mask: Mask, at: Callable[[int], str]) -> str:
    sets = "set outside the rows read" if mask.setter is None else \
        f"set before the walk by {at(mask.setter)}"
    value = "" if mask.value is not None else ", value not in the code"
    return f"{at(mask.row)}, {sets}{value}"


@dataclass(frozen=True)
class Wrap:
    """The chained loads' index wrapped at a register the walk does not write."""

    rows: tuple[int, ...]  # the rows adding the register and choosing (or skipping) it
    bound: str  # the register, as the code spells it (``w7``)
    compares: tuple[int, ...]  # the walk's compares against it
    entry_bytes: int  # bytes one index step moves the chained loads' addresses
    setter: int | None  # the row before the walk that sets the register, if found
    value: int | None  # its value, when that row moves a constant into it
    argument: bool  # nothing in the function before the walk sets it


def wrapped(profile: Profile, op: Callable[[int], Op], rows: list[int],
            keys: tuple[int, ...]) -> Wrap | None:
    """The wrap of an index feeding the chain's loads, by a register the walk does not
    write but compares against; None when there is none."""
    inside = sorted(rows)
    changes = CallEffects(profile, op).changes
    written = {reg for row in inside for reg in changes(row)}
    where = {row: i for i, row in enumerate(inside)}

    def writer(row: int, reg: str) -> int | None:
        """The nearest row that may change ``reg`` before ``row`` in address order, else (a
        value from the previous iteration) the last one of the walk after it."""
        i = where[row]
        return next((q for q in (*inside[i - 1::-1][:i], *inside[:i:-1])
                     if reg in changes(q)), None)

    for row in inside:
        found = _wrap_at(op, row, writer, written, inside)
        if found is None:
            continue
        wrap_rows, bound, spelled = found
        compares = tuple(q for q in inside if op(q).mnemonic in _COMPARES
                         and bound in op(q).src)
        strides = [s for key in keys if (s := _stride(op, writer, key, wrap_rows[-1]))]
        if not compares or not strides:
            continue
        before = profile.rows_before(inside[0], LOOK_BEFORE)
        reached = list(shapes.falls_through(op, before, int(profile.pc[inside[-1]])))
        setter = shapes.setter(op, reached, bound, int(profile.pc[inside[-1]]), changes)
        start = reached[-1] if reached else inside[0]
        # read from the function's first row, which falls through to the walk
        entered = bool(len(reached) == len(before) and  # a Python bool: the mechanism stores it
                       (start == 0 or profile.function[start - 1] != profile.function[start]))
        return Wrap(wrap_rows, spelled, compares, max(strides), setter,
                    None if setter is None else shapes.constant(profile.asm(setter)),
                    setter is None and entered)
    return None


def _wrap_at(op: Callable[[int], Op], row: int, writer: Callable[[int, str], int | None],
             written: set[str], inside: list[int]) -> tuple[tuple[int, int], str, str] | None:
    """At ``row``: the two rows of a wrap of an index by a register the walk does not write
    (the last one writes the wrapped index), that register and its spelling; None if no
    wrap."""
    o = op(row)
    ops = o.operands
    if o.mnemonic == "csel" and len(ops) == 4:
        a, b = isa.parse_register(ops[1]), isa.parse_register(ops[2])
        for i, t in ((a, b), (b, a)):
            w = writer(row, t) if t else None
            step = _plus(op(w), i, written) if w is not None and i else None
            if w is not None and step:
                return (w, row), *step
    if o.mnemonic in ("add", "sub") and len(ops) == 3 and o.dest:
        t = isa.parse_register(ops[2])
        w = writer(row, t) if t else None
        chosen = op(w) if w is not None else None
        if w is not None and chosen is not None and chosen.mnemonic == "csel" and \
                len(chosen.operands) == 4:
            picks = [isa.parse_register(x) for x in chosen.operands[1:3]]
            other = picks[1] if picks[0] == "xzr" else picks[0] if picks[1] == "xzr" else None
            if other and other not in written:
                return (w, row), other, chosen.operands[1 + picks.index(other)]
        branch = inside[inside.index(row) - 1] if inside.index(row) else None
        skipped = branch is not None and isa.is_conditional_branch(op(branch).mnemonic) and \
            op(branch).target == o.pc + 4
        if branch is not None and skipped and t and t not in written and \
                isa.parse_register(ops[1]) == o.dest[0]:
            return (branch, row), t, ops[2]
    return None


def _plus(o: Op, index: str, written: set[str]) -> tuple[str, str] | None:
    """``o`` adds to ``index`` (or subtracts from it) a register the walk does not write:
    that register and its spelling."""
    ops = o.operands
    if o.mnemonic not in ("add", "sub") or len(ops) != 3:
        return None
    regs = [isa.parse_register(x) for x in ops[1:]]
    sides = ((1, 2), (2, 1)) if o.mnemonic == "add" else ((1, 2),)
    for mine, other in sides:
        r = regs[other - 1]
        if regs[mine - 1] == index and r and r not in written and r != index:
            return r, ops[other]
    return None


def _stride(op: Callable[[int], Op], writer: Callable[[int, str], int | None], key: int,
            wrap: int) -> int | None:
    """Bytes one step of the index ``wrap`` writes moves the load ``key``'s address: the
    shifts along the copies, shifts and adds between them (None when it does not feed it)."""
    o = op(key)
    text = next((x for x in o.operands if x.startswith("[")), "")
    scaled = _SCALED.search(text)
    for n, reg in enumerate(o.addr):
        s = _scale(op, writer, key, reg, wrap, 0)
        if s is not None:
            return s << (int(scaled.group(1)) if n == 1 and scaled else 0)
    return None


def _scale(op: Callable[[int], Op], writer: Callable[[int, str], int | None], row: int,
           reg: str, wrap: int, depth: int) -> int | None:
    w = writer(row, reg)
    if w is None or depth > 6:
        return None
    if w == wrap:
        return 1
    o = op(w)
    ops = o.operands
    if o.mnemonic in _COPIES and len(o.src) == 1:
        return _scale(op, writer, w, o.src[0], wrap, depth + 1)
    if o.mnemonic in ("lsl", "ubfiz") and len(o.src) == 1 and len(ops) >= 3 and \
            ops[2].startswith("#"):
        s = _scale(op, writer, w, o.src[0], wrap, depth + 1)
        return None if s is None else s << int(ops[2].lstrip("#"), 0)
    if o.mnemonic == "add" and len(ops) in (3, 4):
        for n in (1, 2):
            r = isa.parse_register(ops[n])
            shift = _SCALED.search(ops[3]) if n == 2 and len(ops) == 4 else None
            s = _scale(op, writer, w, r, wrap, depth + 1) if r and r != "xzr" else None
            if s is not None:
                return s << (int(shift.group(1)) if shift else 0)
    return None


def wrap_metrics(wrap: Wrap | None) -> list[Metric]:
    if wrap is None:
        return []
    out = [Metric("wrapped entry bytes", wrap.entry_bytes, "bytes",
                  "bytes one step of the wrapped index moves the chained loads' address")]
    if wrap.value is not None:
        out.append(Metric("wrapped table size", wrap.value * wrap.entry_bytes, "bytes",
                          "the wrapping register's value x the entry bytes"))
    return out


def wrap_value(wrap: Wrap | None, asm: Callable[[int], str]) -> WrapBound | None:
    """The wrap as the advice reads it: the register and its instructions' texts."""
    if wrap is None:
        return None
    return WrapBound(wrap.bound, tuple(asm(r) for r in wrap.rows),
                     tuple(asm(r) for r in wrap.compares),
                     "" if wrap.setter is None else asm(wrap.setter), wrap.argument)


def wrap_checks(wrap: Wrap | None, asm: Callable[[int], str],
                pc: Callable[[int], int]) -> list[str]:
    if wrap is None:
        return []

    def at(row: int) -> str:
        return f"`{asm(row)}` at {pc(row):#x}"
    sets = (f"set before the walk by {at(wrap.setter)}" if wrap.setter is not None else
            "nothing in the function before the walk sets it (an argument)" if wrap.argument
            else "set outside the rows read")
    value = "" if wrap.value is not None else ", value not in the code"
    return [f"{WRAPPED}{wrap.bound}: {', '.join(at(r) for r in wrap.rows)} wrap the index; "
            f"the walk compares {wrap.bound} at {', '.join(at(r) for r in wrap.compares)}; "
            f"{sets}{value}"]


REACHES = "the second access moves with a bounded value: "
BESIDE = "loads the link addresses near the second access: "
PAIR_CHECK = "the links read the two halves of one pair, chosen by a branch on the second " \
    "access's value: "


def second_values(walk: Walk, asm: Callable[[int], str]
                  ) -> tuple[SecondReach | None, tuple[Beside, ...], PairedLinks | None]:
    """How far the second access reaches, the loads beside it and the paired links as the
    advice reads them (the access itself: ``second_value``)."""
    reach = walk.reach
    said = None if reach is None or not walk.second else SecondReach(
        asm(walk.second[0][0]), asm(reach.value), reach.register, reach.stride,
        None if reach.bits is None else (1 << reach.bits) * abs(reach.stride), reach.bits,
        reach.bound, "" if reach.compare is None else asm(reach.compare), reach.offsets)
    beside = tuple(Beside(asm(row), reg, sign, offset) for row, reg, sign, offset in walk.beside)
    pair = None if walk.pair is None else PairedLinks(
        (asm(walk.pair.halves[0]), asm(walk.pair.halves[1])), walk.pair.size,
        asm(walk.pair.branch))
    return said, beside, pair


def second_checks(walk: Walk, asm: Callable[[int], str], pc: Callable[[int], int]) -> list[str]:
    def at(row: int) -> str:
        return f"`{asm(row)}` at {pc(row):#x}"
    out = []
    reach = walk.reach
    if reach is not None and reach.bits is not None:
        out.append(f"{REACHES}{at(reach.value)} loads {reach.bits} bits; the address moves "
                   f"{_signed(reach.stride)} byte(s) per unit of it")
    elif reach is not None and reach.compare is not None:
        out.append(f"{REACHES}{reach.register} from {at(reach.value)}; the address moves "
                   f"{_signed(reach.stride)} byte(s) per unit of it; the walk leaves once it reaches "
                   f"{reach.bound} ({at(reach.compare)})")
    if walk.beside:
        out.append(BESIDE + ", ".join(
            f"{at(row)}: {_placed(reg, sign, offset)}" for row, reg, sign, offset in walk.beside))
    if walk.pair is not None:
        (a, b), branch = walk.pair.halves, walk.pair.branch
        out.append(f"{PAIR_CHECK}{at(a)} and {at(b)} ({walk.pair.size} bytes), by {at(branch)}")
    return out


def _placed(reg: str, sign: int, offset: int) -> str:
    """Where a load beside the second access reads, against it."""
    moved = f"{'+' if offset > 0 else '−'} {abs(offset)} " if offset else ""
    if reg:
        return f"{'' if sign > 0 else '−'}{reg} {moved}bytes from it"
    return f"{_signed(offset)} byte(s) from it"


def _signed(n: int) -> str:
    return f"−{-n}" if n < 0 else f"{n}"
