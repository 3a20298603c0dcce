"""The bundled guides: every section has a stable ID and is found by a search for its topic."""

from __future__ import annotations

import re

import pytest

from pcscope.core.readers.guides import read_guide, section_index
from pcscope.core.readers.profile_csv import read_profile
from pcscope.index.text import TextIndex
from pcscope.samples import guides

TOPIC_WORDS = re.compile(r"[a-z0-9]+")


@pytest.fixture(scope="module")
def sections():
    found = [s for path in guides() for s in read_guide(path)]
    assert {s.doc for s in found} == {"uarch", "swopt"}
    return found


@pytest.fixture(scope="module")
def text(tmp_path_factory, sections):
    folder = tmp_path_factory.mktemp("g")
    (folder / "p.csv").write_text("pc,samples,asm\n0x10,1,nop\n")
    return TextIndex.build(folder / "text", read_profile(folder / "p.csv"), sections)


def test_ids_are_unique_and_stable(sections):
    ids = [s.id for s in sections]
    assert len(ids) == len(set(ids))
    again = [s.id for path in guides() for s in read_guide(path)]
    assert again == ids
    for s in sections:
        assert re.fullmatch(r"guide:(uarch|swopt)(/[a-z0-9-]+)*", s.id), s.id


def test_every_leaf_section_is_found_by_its_topic(sections, text):
    leaves = [s for s in sections if not any(o.id.startswith(s.id + "/") for o in sections)]
    assert len(leaves) >= 50
    missed = []
    for s in leaves:
        query = " ".join(TOPIC_WORDS.findall(s.heading.lower()))
        ids = [m.id for m in text.search_guides(query, 3)]
        if s.id not in ids:
            missed.append((s.id, query, ids))
    assert not missed, missed


def leaves_of(sections):
    return [s for s in sections
            if s.level > 0 and not any(o.id.startswith(s.id + "/") for o in sections)]


def part(section, lead):
    """The text of one bold lead-in part of a leaf (up to the next lead-in)."""
    text = section.text
    start = text.index(f"**{lead}.**")
    ends = [text.find(f"**{other}.**", start + 1) for other in PARTS if other != lead]
    return text[start:min([e for e in ends if e > start] or [len(text)])]


PARTS = ("What it is", "How it shows", "What to try", "Sources")


def test_every_leaf_has_its_parts_and_says_what_to_measure(sections):
    bad = []
    for s in leaves_of(sections):
        missing = [lead for lead in PARTS if f"**{lead}.**" not in s.text]
        if missing:
            bad.append((s.id, missing))
            continue
        shows = part(s, "How it shows")
        absent = [word for word in ("Profile", "ALP") if word not in shows]
        if "PMU" not in shows and "SPE" not in shows:
            absent.append("PMU/SPE")
        if absent:
            bad.append((s.id, absent))
        if len(s.text.split()) > 380:
            bad.append((s.id, f"{len(s.text.split())} words"))
    assert not bad, bad


OLD_IDS = (   # every section ID of the first edition: stored sessions cite them
    "front-end/instruction-fetch", "front-end/code-footprint",
    "branch-prediction/conditional-branches", "branch-prediction/indirect-branches",
    "branch-prediction/return-stack", "branch-prediction/mispredict-penalty",
    "pipeline/pipeline-stages", "pipeline/issue-wait", "pipeline/execute-latency",
    "pipeline/retire-wait", "pipeline/out-of-order-window", "pipeline/sample-skid",
    "load-and-store-unit/load-to-use-latency", "load-and-store-unit/dependent-loads",
    "load-and-store-unit/store-buffer", "load-and-store-unit/store-to-load-forwarding",
    "load-and-store-unit/split-accesses", "memory-hierarchy/cache-hierarchy",
    "memory-hierarchy/cache-misses", "memory-hierarchy/tlb-hierarchy",
    "memory-hierarchy/hardware-prefetchers", "atomics/exclusive-monitor", "atomics/lse-atomics",
    "atomics/atomic-contention", "atomics/spin-wait-loops", "memory-ordering/data-barriers",
    "memory-ordering/instruction-barrier", "memory-ordering/acquire-and-release",
    "execution-units/integer-division", "execution-units/fp-divide-and-square-root",
    "execution-units/simd-and-fp-pipes", "execution-units/fp-dependency-chains",
    "calls-and-returns/call-overhead", "calls-and-returns/plt-stubs", "calls-and-returns/veneers",
    "memory-copy-and-set/memcpy", "memory-copy-and-set/memset",
)
OLD_SWOPT_IDS = (
    "compiler-flags/target-selection", "compiler-flags/lse-atomics-flags",
    "compiler-flags/optimization-levels", "code-layout/profile-guided-optimization",
    "code-layout/autofdo", "code-layout/bolt", "branches/branchless-code",
    "branches/devirtualization", "branches/interpreter-dispatch", "calls/plt-avoidance",
    "calls/inlining-and-lto", "calls/veneer-avoidance", "memory-access/data-layout-for-locality",
    "memory-access/software-prefetch", "memory-access/pointer-chasing", "memory-access/huge-pages",
    "memory-access/store-forwarding-fixes", "memory-access/alignment",
    "copying-and-zeroing/memcpy-choices", "copying-and-zeroing/memset-choices",
    "arithmetic/division-by-constants", "arithmetic/division-hoisting",
    "arithmetic/fp-accumulation-chains", "vectorization/auto-vectorization",
    "vectorization/aliasing-and-restrict", "vectorization/neon-and-sve",
    "synchronization/atomic-instruction-choice", "synchronization/contention-reduction",
    "synchronization/acquire-and-release", "synchronization/barrier-reduction",
    "synchronization/spin-wait-back-off", "jit-code/jit-code-generation", "jit-code/inline-caches",
)
RENAMED = {
    "guide:uarch/memory-copy-and-set/memcpy": "guide:uarch/memory-copy-and-set/memcpy-and-memmove",
    "guide:swopt/memory-access/huge-pages": "guide:swopt/memory-access/huge-pages-for-data",
    "guide:swopt/jit-code/jit-code-generation": "guide:swopt/jit-code/code-installation",
}


def test_every_first_edition_id_still_resolves(sections):
    index = section_index(sections)
    old = [f"guide:uarch/{i}" for i in OLD_IDS] + [f"guide:swopt/{i}" for i in OLD_SWOPT_IDS]
    assert not [i for i in old if i not in index]
    for former, now in RENAMED.items():
        assert former not in {s.id for s in sections}
        assert index[former].id == now


NEW_SECTIONS = (
    "guide:uarch/front-end/front-end-structures", "guide:uarch/front-end/front-end-stalls",
    "guide:uarch/measurement/top-down-method", "guide:uarch/measurement/pmu-events-by-symptom",
    "guide:uarch/measurement/statistical-profiling-extension",
    "guide:uarch/memory-hierarchy/cache-line-sizes", "guide:uarch/atomics/128-bit-atomics",
    "guide:swopt/compiler-flags/per-function-overhead-flags",
    "guide:swopt/code-layout/huge-pages-for-code",
    "guide:swopt/copying-and-zeroing/glibc-string-variants",
    "guide:swopt/synchronization/false-sharing-and-padding",
    "guide:swopt/jit-code/cross-modification",
)


def test_new_topics_have_sections(sections):
    assert not set(NEW_SECTIONS) - {s.id for s in sections}


# (section, part, what it must say, what it must not say): the corrected facts.
FACTS = [
    ("swopt/synchronization/barrier-reduction", "What to try", ["`stlr` for publishing"], []),
    ("swopt/synchronization/barrier-reduction", "What it is",
     ["against later stores only", "not a release"], []),
    ("uarch/memory-ordering/data-barriers", "What it is", ["needs `stlr`"], []),
    ("uarch/memory-ordering/data-barriers", "What to try", ["`stlr` to publish"], ["ishst"]),
    ("swopt/synchronization/false-sharing-and-padding", "What it is",
     ["64 bytes", "128", "CTR_EL0", "256 on AArch64"], []),
    ("swopt/synchronization/false-sharing-and-padding", "What to try",
     ["alignas(64)", "128", "CTR_EL0"], ["hardware_destructive_interference_size"]),
    ("swopt/synchronization/contention-reduction", "What to try", [],
     ["hardware_destructive_interference_size"]),
    ("uarch/memory-hierarchy/cache-line-sizes", "What it is",
     ["64\nbytes", "128 bytes", "256 bytes", "CTR_EL0", "DCZID_EL0"], []),
    ("swopt/code-layout/bolt", "What it is", ["needs relocations", "--emit-relocs"],
     ["works best"]),
    ("swopt/memory-access/pointer-chasing", "What to try", ["several hops ahead"],
     ["as soon as"]),
    ("uarch/load-and-store-unit/dependent-loads", "What to try", ["several\nhops"],
     ["as soon as its address"]),
    ("uarch/front-end/front-end-stalls", "How it shows",
     ["relative to\neach instruction's own fetch", "back-pressure", "fetch→dispatch"], []),
    ("uarch/front-end/code-footprint", "What it is", ["starves the\nfront end",
                                                      "not a full-pipeline stall"], []),
    ("swopt/vectorization/neon-and-sve", "How it shows",
     ["NEON-only code on a 128-bit SVE core is not by itself a problem"], []),
    ("swopt/vectorization/neon-and-sve", "What it is", ["SVE2\n(Armv9-A"], []),
    ("uarch/execution-units/fp-dependency-chains", "What it is",
     ["FP add 2 cycles, multiply 3, FMA 4", "8 for FMA on N1/N2", "16 on V1/V2"], []),
    ("swopt/arithmetic/fp-accumulation-chains", "What it is",
     ["`-ffp-contract=fast` in GNU modes", "Clang 14"], []),
    ("uarch/load-and-store-unit/split-accesses", "What it is",
     ["FEAT_LSE2", "16-byte block", "exclusives"], []),
    ("uarch/memory-copy-and-set/memcpy-and-memmove", "What it is",
     ["copy forward only", "`cpyp`/`cpym`/`cpye` handle overlap", "glibc 2.38"], []),
    ("uarch/memory-ordering/acquire-and-release", "What it is", ["GCC 13", "LLVM 16"], []),
    ("swopt/synchronization/atomic-instruction-choice", "What it is",
     ["`__atomic_fetch_max`", "GCC has\nno such builtin"], []),
    ("swopt/code-layout/autofdo", "What it is",
     ["BRBE", "SPE", "plain\nIP (cycle) samples", "common fallback", "llvm-profgen"], []),
    ("swopt/code-layout/profile-guided-optimization", "What it is",
     ["IR-level PGO", "`-fprofile-instr-generate`"], []),
    ("swopt/branches/devirtualization", "What it is",
     ["under `-flto` with the linker plugin", "-fdevirtualize-at-ltrans"], []),
    ("uarch/memory-hierarchy/tlb-hierarchy", "What it is", ["by 16", "by 512"], []),
    ("uarch/memory-hierarchy/tlb-hierarchy", "How it shows", ["page walk", "DTLB_WALK"], []),
    ("uarch/branch-prediction/conditional-branches", "What it is", ["min(p, 1 − p)"], []),
    ("uarch/memory-hierarchy/cache-hierarchy", "What it is", ["mesh", "70–130 cycles"], []),
    ("uarch/calls-and-returns/veneers", "What it is",
     ["__AArch64ADRPThunk_", "__AArch64AbsLongThunk_", "_veneer"], []),
    ("swopt/branches/interpreter-dispatch", "What it is", ["ITTAGE", "re-merge", "`bti j`"], []),
    ("swopt/branches/interpreter-dispatch", "What to try",
     ["-fno-gcse -fno-crossjumping", "musttail"], []),
    ("uarch/atomics/spin-wait-loops", "What it is",
     ["`wfet", "event stream", "trap `wfe`"], []),
    ("swopt/jit-code/cross-modification", "What it is",
     ["context synchronisation event", "MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE"], []),
    ("swopt/jit-code/code-installation", "What it is", ["`DminLine`, `IminLine`"], []),
    ("swopt/jit-code/code-installation", "What to try", ["jitdump"], []),
    ("uarch/atomics/128-bit-atomics", "What it is", ["`casp`", "`ldp`/`stp`", "libatomic"], []),
    ("swopt/copying-and-zeroing/glibc-string-variants", "What it is",
     ["__memcpy_generic", "__memcpy_sve", "__memcpy_mops", "__memset_zva64"], []),
    ("swopt/compiler-flags/per-function-overhead-flags", "What it is",
     ["-fstack-protector-strong", "-fstack-clash-protection", "hint-space", "GOT"], []),
    ("swopt/code-layout/huge-pages-for-code", "What it is",
     ["2 MiB-aligned", "-hugify", "64 KiB", "Multi-size THP"], []),
    ("uarch/front-end/front-end-structures", "What it is",
     ["macro-op (MOP) cache", "loop buffer", "two taken branches per\ncycle"], []),
]


@pytest.mark.parametrize("section_id, lead, says, never", FACTS,
                         ids=[f"{f[0]}:{f[1]}" for f in FACTS])
def test_corrected_facts(sections, section_id, lead, says, never):
    section = {s.id: s for s in sections}[f"guide:{section_id}"]
    text = part(section, lead)
    flat = " ".join(text.split())
    assert not [w for w in says if " ".join(w.split()) not in flat], text
    assert not [w for w in never if w in flat], text


def test_the_rules_catalog_no_longer_says_the_corrected_things():
    from pcscope.core.backends.rules import CATALOG

    text = " ".join(rule.recommendation for rule in CATALOG.values())
    assert "as soon as its address is known" not in text
    assert "several hops ahead" in CATALOG["pointer-chase"].recommendation
    assert "CTR_EL0" in CATALOG["atomic-contention"].recommendation
    assert "cannot publish" in CATALOG["barrier-wait"].recommendation
