"""The offline analyst: the default backend, deterministic and without network.

It reads its slice through the same tools a model would use — ``window`` for each window,
``alp`` for the PCs that have records, ``guide`` for the sections its rules cite,
``finding`` and ``asm_around`` when answering a deeper wave's question — applies the
rules catalog (detectors.py, rules.py) and cites only IDs it was given or a tool returned.
Everything it writes is labelled rule-based.
"""

from __future__ import annotations

from typing import Any

from pcscope.core.backends.advice import Advice, advise, recommendation_for
from pcscope.core.backends.detectors import Detection, Insn, WindowView, detect
from pcscope.core.backends.operands import parse
from pcscope.core.backends.rules import CATALOG, Rule
from pcscope.core.backends.text_fit import checks_kept, fit
from pcscope.core.contract.backend import CallRequest, CallResponse, Emit, ToolRunner, Usage
from pcscope.core.contract.findings import Basis, CallOutput, Finding
from pcscope.core.guide_map import sections_for
from pcscope.core.ids import alp_id, hex_pc, parse_pc, pat_id, pc_id
from pcscope.core.isa import is_indirect, is_load

NAME = "offline"
LABEL = "[rule-based]"
MAX_FINDINGS = 16
MAX_PCS = 12  # PCs per finding: the evidence PC first, then its closest companions
COLD = 0.01  # a cited row below this part of the hottest cited row's count is not cited
SPAN = 32  # rows one read of the heaviest site's rows outside the window returns
SPAN_READS = 3  # such reads per idea
ALP_BATCH = 16


class _Reader:
    """Tool use with bookkeeping: every ID the call may cite."""

    def __init__(self, request: CallRequest, use_tool: ToolRunner) -> None:
        self.citable: set[str] = set(request.evidence_ids)
        self._use = use_tool
        self._guides: dict[str, tuple[str, ...]] = {}

    async def use(self, name: str, args: dict[str, Any]):
        result = await self._use(name, args)
        self.citable.update(result.ids)
        return result

    async def guides(self, rule: Rule, sections: tuple[str, ...] | None = None,
                     key: str | None = None) -> tuple[str, ...]:
        """The rule's guide sections this call can cite (fetched once per call and key):
        ``sections`` (else the catalog's) by ID, else the best match of the rule's query."""
        key = key or rule.name
        if key not in self._guides:
            found: list[str] = []
            for section in (sections or rule.guides)[:2]:
                if section not in self.citable:
                    await self.use("guide", {"id": section})
                if section in self.citable:
                    found.append(section)
            if not found:
                result = await self.use("guide", {"query": rule.query, "k": 1})
                found = [i for i in result.ids if i.startswith("guide:")]
            self._guides[key] = tuple(found)
        return self._guides[key]


class OfflineAnalyst:
    name = NAME

    async def run(self, request: CallRequest, use_tool: ToolRunner, emit: Emit) -> CallResponse:
        reader = _Reader(request, use_tool)
        if request.seed.get("question"):
            findings = await self._follow_up(request.seed, reader)
            summary = f"{LABEL} follow-up on {request.seed.get('finding')}"
        else:
            findings, read = await self._analyse(request.seed, reader, emit)
            summary = (f"{LABEL} offline analyst: read {read} windows, "
                       f"{len(findings)} rule(s) fired")
        output = CallOutput(findings=findings[:MAX_FINDINGS], summary=summary)
        return CallResponse(output, output.model_dump_json(), Usage())

    # -- wave 1: a slice -----------------------------------------------------------------
    async def _analyse(self, seed: dict, reader: _Reader,
                       emit: Emit) -> tuple[list[Finding], int]:
        focus = set(seed.get("focus") or ())
        notes = seed.get("notes") or []
        made: list[tuple[tuple, Finding]] = []
        seen: set[str] = set()  # mechanisms already written up by this call
        views = []
        for window_id in seed.get("windows", []):
            view = await self._read_window(window_id, reader)
            if view is not None:
                views.append(view)
        # measured anywhere in this call: a mechanism spanning windows is judged by its
        # measured sites whichever window is read first
        measured = {i.pc for view in views for i in view.insns if i.alp is not None}
        for view in views:
            for det in detect(view):
                rule = CATALOG[det.rule]
                if focus and rule.category not in focus:
                    continue
                emit("status", f"{rule.name} at {hex_pc(det.pc)}")
                finding = await self._finding(det, rule, view, reader, notes)
                seen.update(e for e in finding.evidence if e.startswith("mech:"))
                made.append(((not det.measured, -det.strength, det.pc), finding))
            for mechanism in view.mechanisms:
                advice = advise(mechanism, view.basis, view.module)
                if mechanism["id"] in seen or advice is None or \
                        (focus and mechanism["category"] not in focus):
                    continue
                if measured & set(advice.pcs):
                    continue  # measured: the measured rules spoke (or the figures are fine)
                seen.add(mechanism["id"])
                emit("status", f"{mechanism['kind']} mechanism {mechanism['id']}")
                finding = await self._mechanism_finding(mechanism, advice, view, reader)
                made.append(((True, -mechanism["share"], advice.pcs[0]), finding))
        made.sort(key=lambda item: item[0])
        return [f for _, f in made], len(views)

    async def _read_window(self, window_id: str, reader: _Reader) -> WindowView | None:
        result = await reader.use("window", {"id": window_id})
        if result.error or not result.data:
            return None
        rows = result.data["instructions"]
        records: dict[int, dict] = {}
        with_alp = [hex_pc(row["pc"]) for row in rows if row["alp"]]
        for start in range(0, len(with_alp), ALP_BATCH):
            answer = await reader.use("alp", {"pc": with_alp[start:start + ALP_BATCH]})
            for record in (answer.data or {}).get("records", []):
                records[parse_pc(record["pc"])] = record
        data = result.data
        function = data.get("function_name") or data.get("function") or "(no function)"
        if data.get("module"):
            function += f" ({data['module']})"
        return WindowView(window_id, function, data["weight"],
                          [Insn.of(row, records.get(row["pc"])) for row in rows],
                          basis=data.get("basis", "samples"), module=data.get("module"),
                          mechanisms=data.get("mechanisms", []))

    async def _finding(self, det: Detection, rule: Rule, view: WindowView, reader: _Reader,
                       notes: list[dict]) -> Finding:
        insns = {i.pc: i for i in view.insns}
        anchor = insns[det.pc]
        pcs = det.pcs[:MAX_PCS]
        evidence = [pc_id(pc) for pc in pcs if pc_id(pc) in reader.citable]
        evidence += [alp_id(pc) for pc in pcs
                     if insns[pc].alp is not None and alp_id(pc) in reader.citable]
        evidence += [pat_id(c, pc) for pc in pcs for c in insns[pc].patterns
                     if c == rule.category and pat_id(c, pc) in reader.citable]
        if view.id in reader.citable:
            evidence.append(view.id)
        # the mechanism this detection is a site of (same category: a JIT region or a
        # library is context, not the same issue)
        evidence += [m["id"] for m in view.mechanisms
                     if m["category"] == rule.category and m["id"] in reader.citable
                     and det.pc in {pc for site in m["site_pcs"] for pc in site}]
        evidence += list(await reader.guides(rule))
        noted = [n for n in notes if n["id"] in reader.citable and (
            (n.get("pc") and parse_pc(n["pc"]) in pcs) or n.get("window") == view.id)]
        evidence += [n["id"] for n in noted]
        where = f"`{anchor.asm}` at {hex_pc(det.pc)} in {view.function}, window {view.id} " \
                f"({view.weight:.2%} of the total)"
        basis: Basis
        if det.measured:
            body = f"{LABEL} {where}: {det.figures} ({alp_id(det.pc)})."
            if det.checks:
                body += f" Fields read: {'; '.join(det.checks)}."
            tail = []
            basis, confidence = "measured", 0.6 + 0.35 * det.strength
        else:
            body = f"{LABEL} {where}: {det.figures}."
            tail = [f"To confirm, measure {rule.confirm}."]
            basis, confidence = "profile-only", 0.2 + 0.1 * det.strength
        tail += [f"Engineer's note {note['id']}: {note['text']}" for note in noted]
        # Ask one wave deeper only what the window could not show: the producer of the value.
        questions = [rule.question.format(pc=hex_pc(det.pc))] if rule.question and \
            det.measured and len(det.pcs) == 1 else []
        title = rule.title if det.measured else rule.guess
        claim = fit(body, " ".join(tail))
        recommendation = fit(f"{LABEL} {recommendation_for(rule, view.module)}")
        return Finding(
            title=title.format(asm=anchor.asm, fn=view.function)[:200],
            category=rule.category,
            target=rule.target,
            claim=claim.text,
            recommendation=recommendation.text,
            checks=checks_kept((), claim, recommendation),
            numbers="" if det.measured else _basis_note(view.basis),
            pcs=[hex_pc(pc) for pc in pcs],
            evidence=list(dict.fromkeys(evidence))[:64],
            confidence=round(confidence, 3),
            basis=basis,
            questions=questions,
        )

    async def _mechanism_finding(self, mechanism: dict, advice: Advice, view: WindowView,
                                 reader: _Reader) -> Finding:
        """An idea about a whole mechanism: its sites' PCs and share come from the mechanism,
        which the evidence cites (``mech:``), so every call's idea about it merges into one."""
        rule = CATALOG[advice.rule]
        pcs = (await self._cited(advice.pcs, view, reader,
                                 tuple(mechanism["site_pcs"][0])))[:MAX_PCS]
        evidence = [mechanism["id"]]
        evidence += [pc_id(pc) for pc in pcs if pc_id(pc) in reader.citable]
        if view.id in reader.citable:
            evidence.append(view.id)
        kind = mechanism["kind"]
        evidence += list(await reader.guides(
            rule, sections_for(mechanism["category"], kind), key=f"mech:{kind}"))
        claim = fit(f"{LABEL} {advice.claim}", f"To confirm, measure {rule.confirm}.")
        recommendation = fit(f"{LABEL} {advice.recommendation}")
        return Finding(
            title=advice.title[:200],
            category=mechanism["category"],
            target=rule.target,
            claim=claim.text,
            recommendation=recommendation.text,
            checks=checks_kept(advice.checks, claim, recommendation),
            numbers=_basis_note(view.basis),
            pcs=[hex_pc(pc) for pc in pcs],
            evidence=list(dict.fromkeys(evidence))[:64],
            confidence=advice.confidence,
            basis="profile-only",
            questions=[],
            removes=advice.removes,
        )

    async def _cited(self, pcs: tuple[int, ...], view: WindowView, reader: _Reader,
                     site: tuple[int, ...] = ()) -> list[int]:
        """The PCs an idea cites (hottest_instances), with the rows of the ones the window
        does not show (it shows its hottest rows only, and a site may lie in another window)
        read first, so a cold row is known as cold. The rows of ``site`` (the mechanism's
        heaviest) outside the window are read first, a span at a time: unread rows rank
        last, so a window holding the mechanism's lighter sites would cite those instead."""
        shown = {i.pc for i in view.insns}
        outside = await self._read_span([pc for pc in site if pc not in shown], reader)
        shown |= {i.pc for i in outside}
        while unknown := [pc for pc in hottest_instances(pcs, view.insns, tuple(outside))
                          [:MAX_PCS] if pc not in shown]:
            for pc in unknown:
                shown.add(pc)
                found = await reader.use("asm_around", {"pc": hex_pc(pc), "before": 0,
                                                        "after": 0})
                outside += [Insn.of(row, None) for row in (found.data or {}).get(
                    "instructions", []) if row["pc"] == pc]
        return hottest_instances(pcs, view.insns, tuple(outside))

    async def _read_span(self, pcs: list[int], reader: _Reader) -> list[Insn]:
        """The rows of ``pcs``, SPAN rows a read from the lowest one not yet read, at most
        SPAN_READS reads."""
        out: list[Insn] = []
        left = set(pcs)
        for _ in range(SPAN_READS):
            if not left:
                break
            first = min(left)
            found = await reader.use("asm_around", {"pc": hex_pc(first), "before": 0,
                                                    "after": SPAN})
            got = [Insn.of(row, None) for row in (found.data or {}).get("instructions", [])
                   if row["pc"] in left]
            out += got
            left -= {first, *(i.pc for i in got)}
        return out

    # -- deeper waves: one open question -------------------------------------------------
    async def _follow_up(self, seed: dict, reader: _Reader) -> list[Finding]:
        """Answers "which load feeds this address / branch target?" by reading back from
        the PC; returns the parent finding sharpened with the producer, or nothing."""
        parent_id = seed["finding"]
        parent = await reader.use("finding", {"id": parent_id})
        if parent.error or not parent.data:
            return []
        pc = parse_pc(seed["pcs"][0])
        view = await reader.use("asm_around", {"pc": hex_pc(pc), "before": 16, "after": 0})
        if view.error or not view.data:
            return []
        rows = view.data["instructions"]
        producer = _producer(rows, pc)
        if producer is None:
            return []
        data = parent.data
        source = next(r for r in rows if r["pc"] == producer)
        answer = (f" Follow-up ({parent_id}): the value comes from `{source['asm']}` at "
                  f"{hex_pc(producer)}; start that load earlier (hoist it, or prefetch its "
                  f"address with `prfm pldl1keep`) so the dependent instruction does not wait.")
        pcs = list(dict.fromkeys([*data["pcs"], hex_pc(producer)]))
        evidence = [e for e in [*data["evidence"], parent_id, pc_id(producer)]
                    if e in reader.citable]
        claim = fit(data["claim"], answer.strip())
        return [Finding(
            title=data["title"], category=data["category"], target=data["target"],
            claim=claim.text, recommendation=data["recommendation"],
            checks=checks_kept(data.get("checks", []), claim), numbers=data.get("numbers", ""),
            pcs=pcs[:32], evidence=list(dict.fromkeys(evidence))[:64],
            confidence=data["confidence"], basis=data["basis"], questions=[],
            removes=data.get("removes"),
        )]


def hottest_instances(pcs: tuple[int, ...], insns: list[Insn],
                      outside: tuple[Insn, ...] = ()) -> list[int]:
    """The PCs to cite for a mechanism: its key PC first, then the rest hottest first, and of
    several that make the same access (a load or a store of the same ``[base, #off]``
    text, as on a hot path and its cold twin) only the hottest. Rows below COLD of the
    hottest one are left out (a path run 82 times beside rows run millions of times shows
    nothing about the mechanism), unless that leaves the key PC alone. Rows read
    ``outside`` the window rank after the window's rows of the same count; PCs of neither
    keep their order after the others."""
    share = {i.pc: i.share for i in (*insns, *outside)}
    access = {i.pc: (i.mnemonic[:2], i.asm[i.asm.index("["):]) for i in (*insns, *outside)
              if "[" in i.asm}
    later = {i.pc for i in outside}
    rest = sorted(dict.fromkeys(pcs[1:]), key=lambda pc: (-share.get(pc, -1.0), pc in later))
    out, seen = list(pcs[:1]), {access.get(pc) for pc in pcs[:1]}
    for pc in rest:
        key = access.get(pc)
        if key is None or key not in seen:
            out.append(pc)
            seen.add(key)
    floor = COLD * max((share.get(pc, 0.0) for pc in out), default=0.0)
    warm = [pc for pc in out[1:] if share.get(pc, floor) >= floor]
    return [out[0], *warm] if warm or len(out) == 1 else out


def _basis_note(basis: str) -> str:
    """What the profile's numbers are, and what they cannot tell (said once above the ideas
    when they share it: so it names the rows cited, not "it")."""
    if basis == "executions":
        return ("The counts are exact executions (instrumentation or emulation, no sampling "
                "error), not time: no ALP record covers the rows cited, so the cost per "
                "execution (stalls, misses, mispredicts) is not known.")
    if basis == "cycles":
        return ("The counts are cycles attributed to each PC; no ALP record covers the rows "
                "cited, so why those cycles are spent is not known.")
    return ("The counts are samples (statistical); no ALP record covers the rows cited, so "
            "this is a hypothesis from the profile alone.")


def _producer(rows: list[dict], pc: int) -> int | None:
    """The nearest earlier load writing an address (or branch-target) register of ``pc``."""
    index = next((i for i, r in enumerate(rows) if r["pc"] == pc), None)
    if index is None:
        return None
    ops = parse(rows[index]["asm"])
    wanted = set(ops.src if is_indirect(ops.mnemonic) else ops.address) - {"sp"}
    for row in reversed(rows[:index]):
        row_ops = parse(row["asm"])
        hit = wanted & set(row_ops.dest)
        if not hit:
            continue
        if is_load(row_ops.mnemonic):
            return row["pc"]
        wanted = (wanted - hit) | (set(row_ops.src) - {"sp"})
    return None


def create(arg: str = "", _options: object = None) -> OfflineAnalyst:
    return OfflineAnalyst()
