"""Static llvm-mca evidence for a profile's hot windows: ``mca:0x<pc>`` records, predicted.

Each hot window's instructions are handed to the newest ``llvm-mca-NN`` on PATH as a
loop body (``-mtriple=aarch64 -mcpu=<cpu>``): code addresses become labels (inside the
window) or external symbols, and instructions llvm-mca cannot model are left out with
the reason (exclusives and LSE atomics, calls, which it would charge 100 cycles, and
whatever it rejects). One JSON run (``-json -timeline``) gives per instruction latency,
reciprocal throughput, micro-ops, resource pressure and timeline waits; one text run
(``-bottleneck-analysis``, which has no JSON form) gives the block's bottlenecks and the
critical dependency sequence, with loop-carried edges. LLVM 14 knows the Neoverse names
but schedules them with the Cortex-A57 model: the model actually used is read from the
resource names and a mismatch is reported. Every record says ``"basis": "predicted"``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pcscope.core.errors import InputError, UsageError
from pcscope.core.ids import hex_pc, mca_id, parse_pc
from pcscope.core.importers.common import display_name, input_lines

BASIS = "predicted"
DEFAULT_CPU = "neoverse-n1"
DEFAULT_ITERATIONS = 100
DEFAULT_TIMEOUT = 600.0   # seconds one llvm-mca run may take
MAX_RETRIES = 50
# The scheduling model each CPU should get (resource names start with it + "Unit").
EXPECTED_MODEL = {
    "neoverse-n1": "N1", "neoverse-n2": "N2", "neoverse-v1": "V1", "neoverse-v2": "V2",
    "cortex-a57": "A57", "cortex-a72": "A57", "cortex-a53": "A53",
}
_MODEL_NAMES = {"A57": "Cortex-A57", "A53": "Cortex-A53", "N1": "Neoverse N1",
                "N2": "Neoverse N2", "V1": "Neoverse V1", "V2": "Neoverse V2"}

_EXCLUSIVE = re.compile(r"^(ld|st)[al]?x[rp][bh]?$")
_LSE = re.compile(
    r"^(?:casp?|swp|(?:ld|st)(?:add|clr|eor|set|smax|smin|umax|umin))(?:a|l|al)?[bh]?$"
)
_CALL = re.compile(r"^bl(r(aa|ab|aaz|abz)?)?$")
_NOT_INSN = {".byte", ".inst", ".word", ".short", "<unknown>", "udf"}
_ADDRESS_LAST = re.compile(r"#?0x(?P<addr>[0-9a-fA-F]+)\s*$")
_BRANCHY = {"b", "bl", "cbz", "cbnz", "tbz", "tbnz", "adr", "adrp"}
_LITERAL = {"ldr", "ldrsw", "prfm"}
_LINE_ERROR = re.compile(r"^<stdin>:(\d+):\d+: error: (.*)$", re.M)
_UNSUPPORTED = re.compile(r"error: (.*?)\n(?:note: .*\n)*?note: instruction:\s*(.+)$", re.M)
_PCT = r"\[\s*([0-9.]+)%\s*\]"


@dataclass(frozen=True)
class McaTool:
    path: str
    name: str           # e.g. 'llvm-mca-19'
    version: str        # e.g. '19.1.7'

    @property
    def label(self) -> str:
        return f"{self.name} (LLVM {self.version})"


def find_llvm_mca(path_env: str | None = None) -> McaTool | None:
    """The newest ``llvm-mca-NN`` on PATH (else plain ``llvm-mca``), or None."""
    best: tuple[int, str] | None = None
    for folder in (path_env if path_env is not None else os.environ.get("PATH", "")).split(
        os.pathsep
    ):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            m = re.fullmatch(r"llvm-mca-(\d+)", name)
            full = os.path.join(folder, name)
            if m and os.access(full, os.X_OK) and (best is None or int(m.group(1)) > best[0]):
                best = (int(m.group(1)), full)
    path = best[1] if best else shutil.which("llvm-mca", path=path_env)
    return tool_at(path) if path else None


def tool_at(path: str, timeout: float = 30.0) -> McaTool:
    timeout = min(timeout, 30.0)
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True,
                             timeout=timeout, errors="replace").stdout
    except OSError as exc:
        raise UsageError(f"cannot run {path}: {exc.strerror or exc}") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"`{path} --version` did not finish in {timeout:g} s (--timeout)") \
            from None
    m = re.search(r"LLVM version (\S+)", out)
    return McaTool(path, Path(path).name, m.group(1) if m else "unknown")


@dataclass
class Block:
    """A window prepared for llvm-mca: assembly lines and which PC each instruction is."""

    lines: list[str] = field(default_factory=list)
    pcs: list[int] = field(default_factory=list)          # modelled instructions, in order
    asm: dict[int, str] = field(default_factory=dict)
    skipped: dict[int, str] = field(default_factory=dict)  # pc -> reason


def skip_reason(mnemonic: str) -> str | None:
    m = mnemonic.lower()
    if _EXCLUSIVE.match(m) or _LSE.match(m):
        return "atomic: llvm-mca cannot model it"
    if _CALL.match(m):
        return "call: llvm-mca would charge it 100 cycles"
    if m in _NOT_INSN or m.startswith("."):
        return "not an instruction llvm-mca can assemble"
    return None


def _takes_address(mnemonic: str, operands: str) -> bool:
    m = mnemonic.lower()
    if m in _BRANCHY or m.startswith("b.") or m.startswith("bc."):
        return True
    return m in _LITERAL and "[" not in operands


def label_targets(asm: str, inside: set[int]) -> tuple[str, int | None]:
    """The asm with a code address operand replaced by a label (``.L<hex>`` inside the
    window, an external symbol outside), and that address."""
    mnemonic, _, operands = asm.strip().partition(" ")
    operands = operands.strip()
    m = _ADDRESS_LAST.search(operands)
    if not _takes_address(mnemonic, operands) or not m:
        return asm.strip(), None
    if m.start() and not operands[: m.start()].rstrip().endswith(","):
        return asm.strip(), None
    target = int(m.group("addr"), 16)
    label = f".L{target:x}" if target in inside else f"ext_{target:x}"
    return f"{mnemonic} {operands[: m.start()]}{label}", target


def prepare(rows: Iterable[tuple[int, str]]) -> Block:
    """Turn (pc, asm) rows of one window, in pc order, into llvm-mca input."""
    rows = list(rows)
    inside = {pc for pc, _ in rows}
    block = Block()
    texts: dict[int, str] = {}
    labelled: set[int] = set()
    for pc, asm in rows:
        block.asm[pc] = asm
        reason = skip_reason(asm.split(" ", 1)[0])
        if reason:
            block.skipped[pc] = reason
            continue
        text, target = label_targets(asm, inside)
        if target in inside:
            labelled.add(target)
        texts[pc] = text
    for pc, _ in rows:
        # A label stays even where its instruction is left out: it then names the next one.
        if pc in labelled:
            block.lines.append(f".L{pc:x}:")
        if pc in texts:
            block.lines.append(texts[pc])
            block.pcs.append(pc)
    return block


def _drop(block: Block, index: int, reason: str) -> None:
    """Leave out the index-th modelled instruction (and keep its label)."""
    pc = block.pcs.pop(index)
    block.skipped[pc] = reason
    seen = -1
    for i, line in enumerate(block.lines):
        if not line.endswith(":"):
            seen += 1
            if seen == index:
                block.lines[i] = ""
                break
    block.lines = [line for line in block.lines if line]


def _normal(text: str) -> str:
    return " ".join(text.replace(",", ", ").split()).lower()


def _failed_instruction(block: Block, stderr: str) -> tuple[int, str] | None:
    """Which modelled instruction llvm-mca rejected, and why."""
    m = _LINE_ERROR.search(stderr)
    if m:
        line_no, what = int(m.group(1)), m.group(2)
        line = block.lines[line_no - 1] if 0 < line_no <= len(block.lines) else ""
        index = sum(1 for x in block.lines[: line_no - 1] if not x.endswith(":"))
        if line and not line.endswith(":") and index < len(block.pcs):
            return index, f"llvm-mca: {what}"
    m = _UNSUPPORTED.search(stderr)
    if m:
        want = _normal(m.group(2))
        index = 0
        for line in block.lines:
            if line.endswith(":"):
                continue
            if _normal(line) == want:
                return index, f"llvm-mca: {m.group(1)}"
            index += 1
    return None


def _run(tool: McaTool, block: Block, args: list[str],
         timeout: float) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([tool.path, *args], input="\n".join(block.lines) + "\n",
                              capture_output=True, text=True, timeout=timeout,
                              errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot run {tool.path}: {exc.strerror or exc}") from None
    except subprocess.TimeoutExpired:
        raise UsageError(f"`{tool.path} {' '.join(args[:3])} …` did not finish in {timeout:g} s "
                         "(a longer --timeout, or fewer --iterations)") from None


def _check_cpu(tool: McaTool, cpu: str, stderr: str) -> None:
    if "is not a recognized processor" in stderr:
        raise UsageError(f"{tool.label} does not know --cpu {cpu!r} (it would silently use a "
                         "generic model); install a newer LLVM (e.g. Debian's llvm-19)")


def run_block(tool: McaTool, block: Block, cpu: str, iterations: int,
              timeout: float = DEFAULT_TIMEOUT) -> tuple[str, str]:
    """JSON and bottleneck text of one block, leaving out what llvm-mca rejects."""
    base = ["-mtriple=aarch64", f"-mcpu={cpu}", f"-iterations={iterations}"]
    for _ in range(MAX_RETRIES):
        if not block.pcs:
            return "", ""
        proc = _run(tool, block, [*base, "-json", "-timeline", "-timeline-max-cycles=0",
                                  "-bottleneck-analysis"], timeout)
        _check_cpu(tool, cpu, proc.stderr)
        if proc.returncode == 0:
            text = _run(tool, block, [*base, "-bottleneck-analysis"], timeout)
            return proc.stdout, text.stdout
        failed = _failed_instruction(block, proc.stderr)
        if failed is None:
            first = proc.stderr.strip().splitlines()[:1]
            raise UsageError(f"{tool.label} failed: {first[0] if first else proc.returncode}")
        _drop(block, *failed)
    raise UsageError(f"{tool.label} rejected more than {MAX_RETRIES} instructions of one window")


def scheduling_model(resources: list[str]) -> str | None:
    """The model llvm-mca used, from its resource names (``N1UnitL`` -> ``N1``)."""
    prefixes = {r.split("Unit", 1)[0] for r in resources if "Unit" in r}
    return prefixes.pop() if len(prefixes) == 1 else None


def fallback_note(tool: McaTool, cpu: str, model: str | None) -> str | None:
    """Why the figures are not for ``cpu`` when llvm-mca used another CPU's model."""
    want = EXPECTED_MODEL.get(cpu)
    if want is None or model is None or model == want:
        return None
    return (f"{tool.label} has no scheduling model for {cpu}: it used the "
            f"{_MODEL_NAMES.get(model, model)} model (install llvm-19 for real Neoverse models)")


def _resource_name(raw: str) -> str:
    """``N1UnitL.\\x00`` (sub-unit 0 of N1UnitL) -> ``N1UnitL.0``."""
    return "".join(c if c.isprintable() else str(ord(c)) for c in raw)


@dataclass
class InstructionFigures:
    latency: float
    rthroughput: float
    uops: int
    may_load: bool
    may_store: bool
    pressure: dict[str, float]
    wait: dict[str, float]


@dataclass
class McaJson:
    model: str | None
    resources: list[str]
    summary: dict
    instructions: list[InstructionFigures]


def parse_mca_json(text: str, tool: str = "llvm-mca") -> McaJson:
    """llvm-mca's -json output; anything else is an InputError naming the tool."""
    try:
        return _mca_json(text)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise InputError(tool, None, f"printed something that is not llvm-mca -json output "
                         f"({type(exc).__name__}: {str(exc)[:80]})") from None


def _mca_json(text: str) -> McaJson:
    data = json.loads(text)
    resources = [_resource_name(r) for r in data.get("TargetInfo", {}).get("Resources", [])]
    region = data["CodeRegions"][0]
    info = region["InstructionInfoView"]["InstructionList"]
    n = len(info)
    pressure: list[dict[str, float]] = [{} for _ in range(n)]
    for p in region.get("ResourcePressureView", {}).get("ResourcePressureInfo", []):
        i = p["InstructionIndex"]
        if i < n and p["ResourceUsage"]:
            pressure[i][resources[p["ResourceIndex"]]] = p["ResourceUsage"]
    waits = _timeline_waits(region.get("TimelineView", {}).get("TimelineInfo", []), n)
    figures = [
        InstructionFigures(x["Latency"], x["RThroughput"], x["NumMicroOpcodes"],
                           bool(x.get("mayLoad")), bool(x.get("mayStore")), pressure[i], waits[i])
        for i, x in enumerate(info)
    ]
    return McaJson(scheduling_model(resources), resources, region.get("SummaryView", {}), figures)


def _timeline_waits(timeline: list[dict], n: int) -> list[dict[str, float]]:
    """Average cycles waiting in the scheduler, ready but not issued, and for retirement
    (llvm-mca's 'Average Wait times' columns), over the timeline's iterations."""
    sums = [[0, 0, 0, 0] for _ in range(n)]
    for k, t in enumerate(timeline if n else ()):
        s = sums[k % n]
        s[0] += t["CycleIssued"] - t["CycleDispatched"]
        s[1] += t["CycleIssued"] - t["CycleReady"]
        s[2] += t["CycleRetired"] - t["CycleExecuted"]
        s[3] += 1
    return [{"scheduler": a / c, "ready": b / c, "retire": r / c} if c else {}
            for a, b, r, c in sums]


@dataclass
class Bottleneck:
    summary: dict[str, float]                   # backend_pressure, resource_pressure, …
    resources: dict[str, float]
    critical: dict[int, dict]                   # instruction index -> dependency


_BOTTLENECK_LINES = (
    ("backend_pressure", re.compile(r"Cycles with backend pressure increase\s*" + _PCT)),
    ("resource_pressure", re.compile(r"^\s*Resource Pressure\s*" + _PCT)),
    ("data_dependencies", re.compile(r"^\s*Data Dependencies:\s*" + _PCT)),
    ("register_dependencies", re.compile(r"^\s*- Register Dependencies\s*" + _PCT)),
    ("memory_dependencies", re.compile(r"^\s*- Memory Dependencies\s*" + _PCT)),
)
_RESOURCE_LINE = re.compile(r"^\s*- (\S+)\s*" + _PCT)
_SEQUENCE_LINE = re.compile(
    r"^\s*(?P<mark>\+-*[<>]|\|)\s*(?P<index>\d+)\.\s+.*?"
    r"(?:##\s+(?P<kind>\w+)\s+(?:dependency|interference):\s+(?P<on>.*?))?\s*$"
)


def parse_bottleneck(text: str) -> Bottleneck:
    summary: dict[str, float] = {}
    resources: dict[str, float] = {}
    critical: dict[int, dict] = {}
    in_sequence = loop_carried = False
    for line in text.splitlines():
        if line.startswith("Critical sequence"):
            in_sequence = True
            continue
        if in_sequence:
            if line.startswith(("Instruction Info", "Resources")):
                break
            if "< loop carried >" in line:
                loop_carried = True
                continue
            m = _SEQUENCE_LINE.match(line)
            if m and m.group("mark").endswith(">") and m.group("kind"):
                on = m.group("on").split("[", 1)[0].strip()
                index = int(m.group("index"))
                # The sequence may come back to an instruction across the loop edge.
                earlier = critical.get(index, {}).get("loop_carried", False)
                critical[index] = {"depends_on": f"{m.group('kind').lower()} {on}",
                                   "loop_carried": loop_carried or earlier}
                loop_carried = False
            continue
        for name, pattern in _BOTTLENECK_LINES:
            m = pattern.search(line)
            if m:
                summary[name] = float(m.group(1))
                break
        else:
            m = _RESOURCE_LINE.match(line)
            if m and "Dependencies" not in line:
                resources[m.group(1)] = float(m.group(2))
    return Bottleneck(summary, resources, critical)


@dataclass
class McaResult:
    records: list[dict]
    windows: int
    modelled: int
    skipped: int
    tool: McaTool
    notes: list[str]


def window_records(block: Block, window: str, tool: McaTool, cpu: str, iterations: int,
                   figures: McaJson | None, bottleneck: Bottleneck | None) -> list[dict]:
    """One record per PC of a window, modelled or skipped, ordered by pc."""
    common = {"basis": BASIS, "window": window, "tool": tool.label, "cpu": cpu}
    out: dict[int, dict] = {}
    note = fallback_note(tool, cpu, figures.model) if figures else None
    if figures is not None:
        if len(figures.instructions) != len(block.pcs):
            raise UsageError(f"{tool.label} returned {len(figures.instructions)} instructions "
                             f"for {len(block.pcs)} in {window}")
        s = figures.summary
        cycles = s.get("TotalCycles", 0) / max(s.get("Iterations", iterations), 1)
        block_info = {
            "instructions": len(block.pcs), "skipped": len(block.skipped),
            "iterations": s.get("Iterations", iterations), "cycles_per_iteration": cycles,
            "block_rthroughput": s.get("BlockRThroughput"), "ipc": s.get("IPC"),
            "dispatch_width": s.get("DispatchWidth"),
        }
        if bottleneck is not None:
            block_info["bottleneck"] = {**bottleneck.summary, "resources": bottleneck.resources}
        for i, pc in enumerate(block.pcs):
            f = figures.instructions[i]
            rec = {"id": mca_id(pc), "pc": hex_pc(pc), **common, "asm": block.asm[pc],
                   "model": figures.model, "latency": f.latency, "rthroughput": f.rthroughput,
                   "uops": f.uops, "may_load": f.may_load, "may_store": f.may_store,
                   "pressure": f.pressure, "wait": f.wait}
            if bottleneck is not None and i in bottleneck.critical:
                rec["critical"] = bottleneck.critical[i]
            rec["block"] = block_info
            if note:
                rec["fallback"] = note
            out[pc] = rec
    for pc, reason in block.skipped.items():
        out[pc] = {"id": mca_id(pc), "pc": hex_pc(pc), **common, "asm": block.asm[pc],
                   "skipped": reason}
    return [out[pc] for pc in sorted(out)]


def analyse_profile(profile, tool: McaTool, *, cpu: str = DEFAULT_CPU,
                    iterations: int = DEFAULT_ITERATIONS, top: int | None = None,
                    coverage: float = 0.90, timeout: float = DEFAULT_TIMEOUT) -> McaResult:
    """llvm-mca records for every instruction of the profile's hot windows."""
    selection = profile.hot_windows(top=top, coverage=coverage)
    records: list[dict] = []
    notes: list[str] = []
    modelled = skipped = 0
    for w in selection.windows:
        rows = profile.window_rows(w)
        block = prepare((int(profile.pc[r]), profile.asm(int(r))) for r in rows)
        json_text, text = run_block(tool, block, cpu, iterations, timeout)
        figures = parse_mca_json(json_text, tool.path) if json_text else None
        bottleneck = parse_bottleneck(text) if text else None
        window_id = profile.windows[w].id
        records.extend(window_records(block, window_id, tool, cpu, iterations, figures,
                                      bottleneck))
        modelled += len(block.pcs)
        skipped += len(block.skipped)
        note = fallback_note(tool, cpu, figures.model) if figures else None
        if note and note not in notes:
            notes.append(note)
    records.sort(key=lambda r: parse_pc(r["pc"]))
    return McaResult(records, len(selection.windows), modelled, skipped, tool, notes)


def read_mca(path: str | os.PathLike) -> dict[int, dict]:
    """The records of an mca JSON Lines file by pc (for evidence ``mca:0x<pc>``)."""
    name = display_name(path)
    out: dict[int, dict] = {}
    for lineno, text in input_lines(path):
        if not text.strip():
            continue
        try:
            rec = json.loads(text)
            pc = parse_pc(str(rec["pc"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(name, lineno, f"bad mca record: {exc}") from None
        if rec.get("basis") != BASIS:
            raise InputError(name, lineno, "mca record without \"basis\": \"predicted\"")
        out[pc] = rec
    return out
