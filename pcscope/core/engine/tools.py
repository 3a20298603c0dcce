"""The tools a bounded call may use: typed requests, bounded answers, every use logged.

Every ID a tool returns joins the call's allowed evidence. Requests are parsed by pydantic
models (unknown fields rejected, sizes bounded); nothing a model sends is executed, and
text-index queries run under a time limit. The same tools serve the offline analyst, which
reads ``ToolResult.data``, and model backends, which read ``ToolResult.text``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pcscope.core.alp_columns import AlpRecords
from pcscope.core.contract.backend import ToolResult, ToolSpec
from pcscope.core.contract.findings import Finding
from pcscope.core.engine import evidence_text
from pcscope.core.engine.calls import ToolUse
from pcscope.core.engine.ideas import Accepted, finding_id, windows_of
from pcscope.core.engine.system_prompt import compact
from pcscope.core.errors import EvidenceError, PcscopeError
from pcscope.core.evidence import Evidence, EvidenceStore
from pcscope.core.ids import alp_id, kind_of, parse_pc, pat_id, pc_id, pc_of
from pcscope.core.mechanism_data import builtins_of
from pcscope.core.mechanisms import describe, number

if TYPE_CHECKING:
    from pcscope.core.alp import AlpRecord
    from pcscope.core.engine.validation import Verdict
    from pcscope.core.queries import Queries, SearchResult

MAX_TEXT = 12000  # characters of one tool answer
MAX_WINDOW_ROWS = 96
MAX_GUIDE_TEXT = 2500
MAX_SITES_SHOWN = 8  # citable sites per mechanism (the ones `describe` lists)
QUERY_SECONDS = 5.0


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HotWindowsArgs(_Args):
    """The hottest instruction windows by weight, until ``coverage`` of the total or ``top``
    windows, whichever comes first, with their function and module."""

    coverage: float = Field(0.90, gt=0.0, le=1.0)
    top: int = Field(20, ge=1, le=50)


class MechanismsArgs(_Args):
    """Mechanisms (pattern sites grouped into the one thing to fix: dispatch loops, PLT
    stubs, atomic helpers, spin loops …), heaviest first by their own share; optionally
    only those with a site at ``pc``."""

    pc: str | None = Field(None, max_length=24, description="0x-hex PC")
    limit: int = Field(10, ge=1, le=30)


class AsmAroundArgs(_Args):
    """Instructions around a PC (address order) with samples, share and pattern hits."""

    pc: str = Field(max_length=24, description="0x-hex PC")
    before: int = Field(8, ge=0, le=32)
    after: int = Field(8, ge=0, le=32)


class WindowArgs(_Args):
    """A whole instruction window (its hottest rows when long), with pattern hits and
    which PCs have ALP records."""

    id: str = Field(max_length=40, description="win:0x… ID")


class SearchArgs(_Args):
    """Full-text search over instructions (Tantivy syntax), sorted by samples."""

    query: str = Field(min_length=1, max_length=200)
    limit: int = Field(20, ge=1, le=50)


class RegexArgs(_Args):
    """Regular expression (Rust syntax, case-insensitive) over the asm text or the
    mnemonic, sorted by samples."""

    pattern: str = Field(min_length=1, max_length=200)
    field: Literal["asm", "mnemonic"] = "asm"
    limit: int = Field(20, ge=1, le=50)


class GroupArgs(_Args):
    """Counts, samples and share grouped by mnemonic, function, window, pattern category or
    module, optionally over the instructions a search query matches."""

    by: Literal["mnemonic", "function", "window", "category", "module"]
    where: str | None = Field(None, max_length=200)
    limit: int = Field(20, ge=1, le=50)


_Short = Annotated[str, Field(max_length=24)]    # a PC
_Id = Annotated[str, Field(max_length=120)]      # an evidence ID


class AlpArgs(_Args):
    """Aggregated ALP (simulator) records of exact PCs, figures rounded to 3 digits."""

    pc: str | list[_Short] = Field(max_length=24,
                                   description="one 0x-hex PC or a list of up to 16")

    @model_validator(mode="after")
    def _bounded(self) -> AlpArgs:
        if isinstance(self.pc, list) and not 1 <= len(self.pc) <= 16:
            raise ValueError("pc: give 1 to 16 PCs")
        return self


class GuideArgs(_Args):
    """A guide section by ID, or the best sections for a query (BM25)."""

    id: str | None = Field(None, max_length=200)
    query: str | None = Field(None, max_length=200)
    k: int = Field(3, ge=1, le=5)

    @model_validator(mode="after")
    def _one(self) -> GuideArgs:
        if (self.id is None) == (self.query is None):
            raise ValueError("give exactly one of id and query")
        return self


class FindingArgs(_Args):
    """Another call's accepted finding (finding:…) or a named set of IDs (set:…)."""

    id: str = Field(max_length=80)


class RememberArgs(_Args):
    """Store IDs you may cite under a name (set:<name>) that later calls can fetch."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,39}$")
    ids: list[_Id] = Field(min_length=1, max_length=64)


ARGS: dict[str, type[_Args]] = {
    "hot_windows": HotWindowsArgs,
    "mechanisms": MechanismsArgs,
    "asm_around": AsmAroundArgs,
    "window": WindowArgs,
    "search": SearchArgs,
    "regex": RegexArgs,
    "group": GroupArgs,
    "alp": AlpArgs,
    "guide": GuideArgs,
    "finding": FindingArgs,
    "remember": RememberArgs,
}


def tool_specs() -> tuple[ToolSpec, ...]:
    """The tool set as a model sees it (fixed for a run, so prompt caches hold)."""
    return tuple(ToolSpec(name, (model.__doc__ or name).strip(), model.model_json_schema())
                 for name, model in ARGS.items())


class ToolError(PcscopeError):
    """A request the tool cannot answer; the call sees the message, the run goes on."""


class AlpRenderings:
    """Each PC's ALP record rendered once per run (rounded figures): the data and the full
    line the ``alp`` tool returns (briefs show the compact form of ``evidence_text``)."""

    def __init__(self, store: EvidenceStore) -> None:
        self._table = store.workload.alp
        self._records: dict[int, AlpRecord] = {}
        self._cache: dict[int, tuple[dict[str, Any], str]] = {}

    def preload(self, pcs: Iterable[int]) -> None:
        """Build the records of ``pcs`` ahead. The table builds records far faster in one
        pass than one at a time, so a large share of it is read in one pass."""
        if self._table is None:
            return
        wanted = {int(pc) for pc in pcs if int(pc) not in self._records}
        records = self._table.records
        if len(wanted) * 8 < len(records) and isinstance(records, AlpRecords):
            chosen = records.many(sorted(wanted))  # a small share: only those rows
        else:
            chosen = [record for record in records.values() if record.pc in wanted]
        for record in chosen:
            self._records[record.pc] = record

    def has(self, pc: int) -> bool:
        return pc in self._records or (self._table is not None and pc in self._table.records)

    def record(self, pc: int) -> AlpRecord | None:
        """The aggregated record (built once: the table builds records on access)."""
        if not self.has(pc):
            return None
        if pc not in self._records:
            assert self._table is not None  # has(pc) without a table: already built
            self._records[pc] = self._table.records[pc]
        return self._records[pc]

    def get(self, pc: int) -> tuple[dict[str, Any], str] | None:
        """(record as JSON data, full line) or None without a record."""
        record = self.record(pc)
        if record is None:
            return None
        if pc not in self._cache:
            data = record.to_json(rounded=True)
            self._cache[pc] = (data, f"{record.id} {compact(data)}")
        return self._cache[pc]


@dataclass
class SharedMemory:
    """What the calls of one run share: accepted findings, named sets of IDs, renderings."""

    store: EvidenceStore
    findings: dict[str, Finding] = field(default_factory=dict)
    sets: dict[str, tuple[str, ...]] = field(default_factory=dict)  # set:<name> -> ids
    on_set: Callable[[str, str, list[str]], None] | None = None  # (name, call, ids) persist
    alp: AlpRenderings = field(init=False)

    def __post_init__(self) -> None:
        self.alp = AlpRenderings(self.store)

    @property
    def queries(self) -> Queries:
        """Search, regex, grouping and guide retrieval over the workload's index."""
        return self.store.workload.queries

    def accept(self, verdict: Verdict, call: str, wave: int, model: str) -> list[Accepted]:
        """The findings validation accepted, named ``finding:<call>.f<n>`` and registered
        as evidence that later calls may fetch and cite."""
        out = []
        for n, finding, pcs in verdict.accepted:
            fid = finding_id(call, n)
            self.store.register(Evidence(
                fid, "finding", finding.title,
                f"[{finding.category}] {finding.claim} Recommendation: "
                f"{finding.recommendation}", pcs))
            self.findings[fid] = finding
            out.append(Accepted(fid, call, wave, model, finding, pcs,
                                windows_of(self.store.profile, pcs)))
        return out

    def add_set(self, name: str, call: str, ids: list[str]) -> str:
        set_id = f"set:{name}"
        pcs = tuple(dict.fromkeys(pc for pc in (_pc_or_none(i) for i in ids) if pc is not None))
        self.store.register(Evidence(set_id, "set", name, f"{len(ids)} IDs stored by {call}",
                                     pcs))
        self.sets[set_id] = tuple(ids)
        return set_id


def _pc_or_none(evidence_id: str) -> int | None:
    try:
        return pc_of(evidence_id)
    except ValueError:
        return None


class ToolBox:
    """The tools of one call: answers requests and grows the call's allowed evidence."""

    def __init__(self, store: EvidenceStore, shared: SharedMemory, call: str,
                 given: tuple[str, ...],
                 on_use: Callable[[ToolUse], None] | None = None) -> None:
        self.store = store
        self.shared = shared
        self.call = call
        self.allowed: set[str] = set(given)
        self.fetched: list[str] = []
        self.log: list[ToolUse] = []
        self._on_use = on_use

    async def use(self, name: str, args: dict[str, Any]) -> ToolResult:
        started = time.perf_counter()
        try:
            model = ARGS.get(name)
            if model is None:
                raise ToolError(f"unknown tool {_capped(name)!r} (tools: {', '.join(ARGS)})")
            request = model.model_validate(args)
            if isinstance(request, RegexArgs):  # the one query that can run long: it stops
                deadline = time.monotonic() + QUERY_SECONDS
                result = await asyncio.to_thread(self._regex, request, deadline)
            elif name in ("search", "group"):   # bounded by query length and limits
                result = await asyncio.wait_for(
                    asyncio.to_thread(getattr(self, f"_{name}"), request), QUERY_SECONDS)
            else:
                result = getattr(self, f"_{name}")(request)
        except ValidationError as exc:
            result = _error(f"bad {name} request: {exc.errors()[0]['msg']}")
        except TimeoutError:
            result = _error(f"{name} took longer than {QUERY_SECONDS:.0f} s; narrow the query")
        except (PcscopeError, ValueError) as exc:
            result = _error(str(exc))
        result = _bounded(result)
        for evidence_id in result.ids:
            if evidence_id not in self.allowed:
                self.allowed.add(evidence_id)
                self.fetched.append(evidence_id)
        use = ToolUse(_capped(name), _capped(args), list(result.ids), result.error,
                      result.text, round(time.perf_counter() - started, 6))
        self.log.append(use)
        if self._on_use is not None:
            self._on_use(use)
        return result

    # -- the tools -----------------------------------------------------------------------
    def _hot_windows(self, req: HotWindowsArgs) -> ToolResult:
        profile = self.store.profile
        selection = profile.hot_windows(top=req.top, coverage=req.coverage)
        lines = [f"{len(selection.windows)} hot windows covering {selection.coverage:.3%} of "
                 f"the {profile.basis}"]
        ids: list[str] = []
        data = []
        for index in selection.windows:
            win = profile.windows[index]
            fn = self.store.function_of(win.first_pc)
            module = profile.modules[win.module] if win.module >= 0 else None
            ids += [win.id, *([fn.id] if fn else [])]
            lines.append(f"{win.id}  weight {win.weight:.3%}  {win.n} instructions  "
                         f"{fn.id if fn else '(no function)'}  {module or ''}".rstrip())
            data.append({"window": win.id, "function": fn.id if fn else None,
                         "module": module, "weight": win.weight, "n": win.n})
        return ToolResult("\n".join(lines),
                          {"coverage": selection.coverage, "windows": data},
                          tuple(dict.fromkeys(ids)))

    def _mechanisms(self, req: MechanismsArgs) -> ToolResult:
        table = self.store.workload.mechanisms
        found = table.at(parse_pc(req.pc)) if req.pc is not None else list(table)
        shown = found[: req.limit]
        where = f" with a site at {req.pc}" if req.pc is not None else ""
        lines = [f"{len(found)} mechanisms{where}, showing {len(shown)} by own share"]
        ids: list[str] = []
        for mech in shown:
            sites = [pc_id(site.pc) for site in mech.sites[:MAX_SITES_SHOWN]]
            ids += [mech.id, *sites]
            lines += [describe(mech), f"citable sites: {' '.join(sites)}"]
        return ToolResult("\n".join(lines),
                          {"mechanisms": [builtins_of(m) for m in shown]},
                          tuple(dict.fromkeys(ids)))

    def _asm_around(self, req: AsmAroundArgs) -> ToolResult:
        pc = parse_pc(req.pc)
        try:
            view = self.store.asm_around(pc, req.before, req.after)
        except EvidenceError as exc:
            raise ToolError(str(exc)) from None
        fn = self.store.function_of(pc)
        rows = [ins.row for ins in view.instructions]
        first = self.store.profile.function[rows[0]] if rows else -1
        first_fn = self.store.profile.functions[int(first)].id if first >= 0 else None
        items = evidence_text.items_of(self.store.workload, rows, self.shared.alp.record, mark=pc)
        lines = [f"{view.window} {first_fn or '(no function)'} (> = {pc_id(pc)})",
                 *evidence_text.instruction_lines(items, self.store.profile.basis, first_fn)]
        ids = [view.window, *([fn.id] if fn else []), *_item_ids(items)]
        return ToolResult("\n".join(lines),
                          {"window": view.window, "instructions": [self._row_data(r) for r in rows]},
                          tuple(dict.fromkeys(ids)))

    def _window(self, req: WindowArgs) -> ToolResult:
        win = self.store.window_by_id(req.id) if req.id.startswith("win:") else None
        if win is None:
            raise ToolError(f"no window {req.id}")
        profile = self.store.profile
        rows = profile.window_rows(win.index)
        if len(rows) > MAX_WINDOW_ROWS:
            hottest = sorted(rows.tolist(), key=lambda r: (-int(profile.value[r]), r))
            rows = sorted(hottest[:MAX_WINDOW_ROWS])
        rows = [int(r) for r in rows]
        fn = self.store.function_of(win.first_pc)
        items = evidence_text.items_of(self.store.workload, rows, self.shared.alp.record)
        lines = [f"window {win.id} {fn.id if fn else '(no function)'}: weight "
                 f"{evidence_text.share_text(win.weight, profile.basis)}, {win.n} instructions, "
                 f"showing {len(rows)}",
                 *evidence_text.instruction_lines(items, profile.basis, fn.id if fn else None)]
        ids = [win.id, *([fn.id] if fn else []), *_item_ids(items)]
        module = profile.modules[win.module] if win.module >= 0 else None
        mechanisms = self._mechanisms_at([int(profile.pc[r]) for r in rows])
        for m in mechanisms:
            ids.append(m["id"])
            lines.append(f"mechanism {m['id']}: own share {m['share']:.3%} over "
                         f"{m['sites']} site(s); " + "; ".join(
                             f"{x['name']} {number(x['value'])}" for x in m["metrics"]))
        return ToolResult("\n".join(lines),
                          {"window": win.id, "function": fn.id if fn else None,
                           "function_name": fn.name if fn else None, "module": module,
                           "weight": win.weight, "n": win.n, "basis": profile.basis,
                           "instructions": [self._row_data(r) for r in rows],
                           "mechanisms": mechanisms},
                          tuple(dict.fromkeys(ids)))

    def _mechanisms_at(self, pcs: list[int]) -> list[dict[str, Any]]:
        """The mechanisms with a site in ``pcs``, heaviest first, as data."""
        table = self.store.workload.mechanisms
        found = {m.id: m for pc in pcs for m in table.at(pc)}
        return [builtins_of(m)
                for m in sorted(found.values(), key=lambda m: (-m.share, m.id))]

    def _row_data(self, row: int) -> dict[str, Any]:
        profile = self.store.profile
        pc = int(profile.pc[row])
        return {
            "pc": pc,
            "asm": profile.asm(row),
            "mnemonic": profile.mnemonics[int(profile.mnemonic[row])],
            "samples": int(profile.samples[row]),
            "share": profile.share(row),
            "patterns": list(self.store.workload.patterns.categories_at(pc)),
            "alp": self.shared.alp.has(pc),
        }

    def _search(self, req: SearchArgs) -> ToolResult:
        result = self.shared.queries.search(req.query, limit=req.limit)
        return self._hits(f"search {req.query!r}", result)

    def _regex(self, req: RegexArgs, deadline: float | None = None) -> ToolResult:
        result = self.shared.queries.regex(req.pattern, field=req.field, limit=req.limit,
                                           deadline=deadline)
        return self._hits(f"regex {req.pattern!r} on {req.field}", result)

    def _hits(self, what: str, result: SearchResult) -> ToolResult:
        more = " (truncated)" if result.truncated else ""
        lines = [f"{what}: {result.total} matches{more}, showing {len(result.hits)} by samples"]
        ids: list[str] = []
        for h in result.hits:
            ids += [h.id, h.window]
            lines.append(f"{h.id}  {h.asm}  share {h.share:.3%}  {h.window}  "
                         f"{h.function or ''}".rstrip())
        return ToolResult("\n".join(lines), result.model_dump(), tuple(dict.fromkeys(ids)))

    def _group(self, req: GroupArgs) -> ToolResult:
        result = self.shared.queries.group(req.by, where=req.where, limit=req.limit)
        lines = [f"group by {req.by}{' where ' + repr(req.where) if req.where else ''}: "
                 f"{result.total} groups over {result.instructions} instructions"
                 f"{' (truncated)' if result.truncated else ''}"]
        for g in result.groups:
            lines.append(f"{g.id or g.key}  count {g.count}  samples {g.samples}  "
                         f"share {g.share:.3%}")
        ids = tuple(g.id for g in result.groups if g.id)
        return ToolResult("\n".join(lines), result.model_dump(), ids)

    def _alp(self, req: AlpArgs) -> ToolResult:
        texts = req.pc if isinstance(req.pc, list) else [req.pc]
        records, lines, ids = [], [], []
        for text in texts:
            pc = parse_pc(text)
            rendered = self.shared.alp.get(pc)
            if rendered is None:
                lines.append(f"{alp_id(pc)}: no ALP record")
                continue
            data, line = rendered
            records.append(data)
            ids.append(alp_id(pc))
            lines.append(line)
        if not records:
            raise ToolError("; ".join(lines) if lines else "no PCs given")
        return ToolResult("\n".join(lines), {"records": records}, tuple(ids))

    def _guide(self, req: GuideArgs) -> ToolResult:
        if req.id is not None:
            if not req.id.startswith("guide:") or not self.store.exists(req.id):
                raise ToolError(f"no guide section {req.id}")
            section = self.store.resolve(req.id)
            text = section.text if len(section.text) <= MAX_GUIDE_TEXT else \
                section.text[: MAX_GUIDE_TEXT - 1] + "…"
            return ToolResult(f"{req.id} \"{section.title}\"\n{text}",
                              {"sections": [{"id": req.id, "heading": section.title,
                                             "text": text}]}, (req.id,))
        hits = search_guides(self.shared, req.query or "", req.k)
        if not hits:
            raise ToolError(f"no guide section matches {req.query!r}")
        lines = [f"{gid} \"{heading}\": {' '.join(text.split())[:300]}"
                 for gid, heading, text in hits]
        return ToolResult("\n".join(lines),
                          {"sections": [{"id": g, "heading": h, "text": t} for g, h, t in hits]},
                          tuple(g for g, _h, _t in hits))

    def _finding(self, req: FindingArgs) -> ToolResult:
        if req.id in self.shared.findings:
            finding = self.shared.findings[req.id]
            text = (f"{req.id} [{finding.category}, {finding.basis}, confidence "
                    f"{finding.confidence:.2f}] \"{finding.title}\"\nclaim: {finding.claim}\n"
                    f"recommendation: {finding.recommendation}\npcs: {' '.join(finding.pcs)}\n"
                    f"evidence: {' '.join(finding.evidence)}")
            return ToolResult(text, {"id": req.id, **finding.model_dump()},
                              (req.id, *finding.evidence))
        if req.id in self.shared.sets:
            members = self.shared.sets[req.id]
            return ToolResult(f"{req.id}: {' '.join(members)}",
                              {"id": req.id, "ids": list(members)}, (req.id, *members))
        raise ToolError(f"no finding or set {req.id} (yet)")

    def _remember(self, req: RememberArgs) -> ToolResult:
        foreign = [i for i in req.ids if i not in self.allowed]
        if foreign:
            raise ToolError(f"only IDs this call may cite can be remembered: {foreign[0]}")
        if f"set:{req.name}" in self.shared.sets:
            raise ToolError(f"set:{req.name} exists; choose another name")
        for evidence_id in req.ids:
            kind_of(evidence_id)
        set_id = self.shared.add_set(req.name, self.call, list(req.ids))
        if self.shared.on_set is not None:
            self.shared.on_set(req.name, self.call, list(req.ids))
        return ToolResult(f"stored {len(req.ids)} IDs as {set_id}", {"id": set_id}, (set_id,))


def search_guides(shared: SharedMemory, query: str, k: int) -> list[tuple[str, str, str]]:
    """(id, heading, whole text) of the best guide sections for ``query`` (BM25); each
    prompt cuts the text its own way."""
    guides = shared.store.workload.guides
    if not guides:
        return []
    text = {s.id: s.text for s in guides}
    return [(h.id, h.heading, text.get(h.id, h.text))
            for h in shared.queries.search_guides(query, k=k).hits]


def _item_ids(items: list[evidence_text.Shown]) -> list[str]:
    """The IDs an instruction line makes citable: its PC, its patterns, its ALP record."""
    ids: list[str] = []
    for item in items:
        ids += [pc_id(item.pc), *(pat_id(c, item.pc) for c in item.patterns)]
        if item.alp is not None:
            ids.append(alp_id(item.pc))
    return ids


MAX_LOGGED = 200   # characters of one string a model sent that the call log keeps
MAX_LOGGED_ITEMS = 64


def _capped(value: Any, depth: int = 0) -> Any:
    """What a model sent (a tool name, its arguments), cut to a bounded size before it is
    echoed or logged: a model can send a megabyte of anything."""
    if isinstance(value, str):
        return value if len(value) <= MAX_LOGGED else value[:MAX_LOGGED] + "…"
    if depth >= 4:
        return "…"
    if isinstance(value, dict):
        items = list(value.items())[:MAX_LOGGED_ITEMS]
        return {_capped(str(k)): _capped(v, depth + 1) for k, v in items}
    if isinstance(value, list | tuple):
        return [_capped(v, depth + 1) for v in value[:MAX_LOGGED_ITEMS]]
    return value


def _error(message: str) -> ToolResult:
    return ToolResult(f"error: {message}", None, (), message)


def _bounded(result: ToolResult) -> ToolResult:
    if len(result.text) <= MAX_TEXT:
        return result
    cut = result.text[:MAX_TEXT].rsplit("\n", 1)[0]
    shown = {i for i in result.ids if i in cut}
    return ToolResult(cut + "\n… (answer truncated)", result.data,
                      tuple(i for i in result.ids if i in shown), result.error)

