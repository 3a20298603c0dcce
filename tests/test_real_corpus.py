"""What an experienced engineer expects of each real corpus profile (../shared/corpus/real):
which mechanisms are reported, which look-alikes stay quiet, and why.

The figures asserted here come from each profile's README (computed apart from pcscope),
not from pcscope's own output. Profiles are exact execution counts (QEMU), analysed with
``--counts executions``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pcscope.cli.main import main
from pcscope.core import invariant_work, natural_loops
from pcscope.core.patterns import code_facts
from pcscope.index.store import open_workload

REAL = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "real"
NAMES = ("bzip2", "openssl", "pigz", "python", "xz")


@pytest.fixture(scope="module")
def analysed(tmp_path_factory):
    """name -> (workload, report JSON, markdown), built once per profile on first use."""
    cache: dict[str, tuple] = {}
    folder = tmp_path_factory.mktemp("real")

    def get(name: str):
        profile = REAL / name / "profile.csv.gz"
        if not profile.exists():
            pytest.skip(f"real corpus profile {profile} is not here")
        if name not in cache:
            out = folder / name
            code = main(["analyze", str(profile), "--model", "offline", "--counts", "executions",
                         "--index-dir", str(folder / "idx"), "--json", str(out) + ".json",
                         "--markdown", str(out) + ".md"])
            assert code == 0
            workload = open_workload(profile, index_dir=folder / "idx", counts="executions")
            cache[name] = (workload, json.loads(Path(str(out) + ".json").read_text()),
                           Path(str(out) + ".md").read_text())
        return cache[name]

    return get


def mechanisms(workload, kind: str):
    return [m for m in workload.mechanisms if m.kind == kind]


def idea_mechs(report) -> list[str]:
    return [e for i in report["ideas"] for e in i["evidence"] if e.startswith("mech:")]


@pytest.mark.parametrize("name", NAMES)
def test_quiet_look_alikes_everywhere(analysed, name):
    """Single-threaded programs (the compressors; python's GIL is never contended): no
    spin-wait. No pointer chase from a GOT/global (adrp) or stack base."""
    workload, report, _md = analysed(name)
    assert workload.patterns.counts()["spin-wait"] == 0
    assert not mechanisms(workload, "spin-wait")
    assert not [i for i in report["ideas"] if i["category"] == "spin-wait"]
    profile = workload.profile
    for hit in workload.patterns.hits("dependent-load"):
        asm = profile.asm(hit.row)
        assert "[sp" not in asm and "[x29" not in asm, asm
        base = asm.split("[", 1)[1].split(",")[0].split("]")[0].strip()
        previous = [profile.asm(r) for r in range(max(0, hit.row - 3), hit.row)]
        assert not any(p.startswith("adrp") and base[1:] in p.split(",")[0] for p in previous), \
            (asm, previous)


@pytest.mark.parametrize("name", NAMES)
def test_ideas_are_few_distinct_and_sized_by_their_sites(analysed, name):
    workload, report, markdown = analysed(name)
    assert 0 < len(report["ideas"]) <= 12
    cited = idea_mechs(report)
    assert len(cited) == len(set(cited))  # each mechanism once
    # no claim or recommendation is cut at the contract's length (the measurement that
    # would confirm it comes last)
    assert all(len(i[k]) < 2000 for i in report["ideas"] for k in ("claim", "recommendation"))
    profile = workload.profile
    for m in workload.mechanisms:
        rows = [profile.row_of(pc) for pc in m.pcs]
        assert abs(m.share - profile.value[rows].sum() / profile.total) < 1e-9
        assert m.pcs == tuple(sorted({pc for s in m.sites for pc in s.pcs}))
    assert "executions" in markdown.splitlines()[3]  # "total N executions", not samples


@pytest.mark.parametrize("name", NAMES)
def test_every_claim_keeps_its_evidence_statement(analysed, name):
    """sme.md asks each idea what the numbers cannot tell (its ``numbers``, shown under the
    claim) and what to measure (the claim's end): a long claim is shortened in its lists,
    never at its end, and lists are not written twice."""
    _workload, report, _md = analysed(name)
    for idea in report["ideas"]:
        claim = idea["claim"]
        if idea["basis"] == "profile-only":
            assert ". To confirm, measure " in claim and claim.endswith("."), claim[-200:]
            assert "exact executions" in idea["numbers"] and "is not known." in idea["numbers"]
        if "Heaviest: " in claim:
            assert "heaviest: " not in claim, claim


def test_python_dispatch_is_one_mechanism(analysed):
    """README: 162 executed `br x3` dispatch sites in _PyEval_EvalFrameDefault, 13,791,590
    dispatches, one per 37.8 instructions of the function."""
    workload, report, markdown = analysed("python")
    dispatch = mechanisms(workload, "dispatch")
    assert len(dispatch) == 1
    m = dispatch[0]
    assert m.functions == ("_PyEval_EvalFrameDefault",)
    figures = {x.name: x.value for x in m.metrics}
    assert figures["dispatch sites"] == 162
    assert figures["dispatches"] == 13_791_590
    assert figures["instructions per dispatch"] == 37.8
    # each site counts its dispatch sequence (opcode fetch, the flags merged into the
    # opcode, the table load), not only its `ldr`+`br`: ~11 instructions per dispatch
    assert 8 <= figures["dispatch sequence"] <= 14
    assert figures["stack reloads in the sequence"] >= 1
    site = next(s for s in m.sites if s.pc == 0x4a9340)
    assert {0x4a9310, 0x4a9318, 0x4a9328, 0x4a9338, 0x4a933c} <= set(site.pcs)
    # review 12 R4: the halfword at adrp page + 0xb34 (`ldrh`, `cmp #0`, `csetm`; through
    # [sp, #0x68] at 0x4a92f8) and the byte at [sp, #0x100] stored once per entry, named
    # and counted per dispatch (13.6 M `csetm` and 13.6 M of the sites' `ldrb` runs)
    assert figures["fixed-address test per dispatch"] == 3.1
    assert figures["frame-field test per dispatch"] == 1.0
    assert figures["merged into the opcode"] == 6.0
    fixed = next(c for c in m.checks if c.startswith("a value at a fixed address"))
    assert "page 0xa5e000 + 0xb34" in fixed and "`ldrh w2, [x2]`" in fixed
    assert "semaphore" in report["ideas"][0]["recommendation"]
    assert 0x4a932c not in site.pcs  # `lsr w22, w0, #8` (the oparg) is not the target's
    assert m.share > 0.10
    idea = next(i for i in report["ideas"] if m.id in i["evidence"])
    assert idea["category"] == "indirect-branch"
    # already threaded: no advice to devirtualise or to switch to computed goto
    assert "already threaded" in idea["recommendation"]
    assert "devirtualiz" not in idea["recommendation"].lower()
    # the handlers' type-tag compares are no byte loops, their loads no chases
    fn = workload.profile.functions.index_of("_PyEval_EvalFrameDefault")
    pcs = {int(workload.profile.pc[r]) for r in workload.profile.function_rows(fn)}
    for other in report["ideas"]:
        if other is not idea:
            assert not pcs & {int(p, 16) for p in other["pcs"]}, other["title"]


def test_openssl_plt_and_strcmp_not_atomics(analysed):
    """README: libcrypto calls its own exported functions through its PLT (0.064), strcmp
    0.05; the outline-atomic helper takes the LSE path; the SHA-256 kernel already uses the
    crypto extensions."""
    workload, report, _md = analysed("openssl")
    plt = max(mechanisms(workload, "plt"), key=lambda m: m.share)
    assert 0.05 < plt.share < 0.06 and len(plt.sites) > 400
    # a stub belongs to one mechanism: strcmp's stub is strcmp's, not the PLT's
    strcmp_stub = 0x5502add59c
    assert strcmp_stub not in plt.pcs
    titles = {i["title"] for i in report["ideas"]}
    assert any(plt.id in i["evidence"] for i in report["ideas"])
    assert any("strcmp" in t for t in titles)
    # strcmp is one mechanism with its one caller, OSSL_PARAM_locate (a small lookup
    # function calling it once per entry), and the stub between them: ~10 %, not 5 %
    strcmp = next(m for m in mechanisms(workload, "libc-routine") if m.functions[0] == "strcmp")
    assert "OSSL_PARAM_locate" in {s.function for s in strcmp.sites}
    assert 0.09 < strcmp.share < 0.11 and strcmp_stub in strcmp.pcs
    idea = next(i for i in report["ideas"] if strcmp.id in i["evidence"])
    assert "OSSL_PARAM_locate" in idea["recommendation"] and "once" in idea["recommendation"]
    row = next(r for r in report["run"]["coverage"]["table"] if r["name"] == "OSSL_PARAM_locate")
    assert row["status"] == "idea"
    # the hot helper family takes the LSE path (a copy called twice at start-up, before
    # the capability flag is set, took the LL/SC path: that is what the counts say)
    helpers = max(mechanisms(workload, "outline-atomic"), key=lambda m: m.share)
    assert {x.name: x.value for x in helpers.metrics}["LSE path"] == 100.0
    assert "<unknown_07>" in helpers.functions
    for idea in report["ideas"]:
        assert "-moutline-atomics" not in idea["recommendation"]
        assert idea["category"] not in ("atomic-llsc", "atomic-contention")
    sha = workload.profile.functions.index_of("<unknown_01>")
    kernel = {int(workload.profile.pc[r]) for r in workload.profile.function_rows(sha)}
    assert not [i for i in report["ideas"] if kernel & {int(p, 16) for p in i["pcs"]}]
    # ...and the coverage table says so, from the instructions
    row = next(r for r in report["run"]["coverage"]["table"] if r["name"] == "<unknown_01>")
    assert "crypto extensions" in row["code"] and "sha256h" in row["code"]
    # OPENSSL_cleanse zeroes with `str xzr, [x0], #8`: a store loop idea (3% of the run)
    row = next(r for r in report["run"]["coverage"]["table"] if r["name"] == "OPENSSL_cleanse")
    # and, 3 times per digest, the rest of it belongs to the per-operation call tree: the
    # two ideas share no PC (the tree counts only rows no other mechanism counts)
    (idea, tree) = sorted((report["ideas"][rank - 1] for rank in row["ideas"]),
                          key=lambda i: "Narrow store loop" not in i["title"])
    assert idea["title"].startswith("Narrow store loop") and "8-byte" in idea["title"]
    # written in assembly (no frame, x1 not cleared on return in a -fzero-call-used-regs
    # library): the change is the instruction edit, with no C-compiler caveats
    assert "`stp xzr, xzr, [xN], #16`" in idea["recommendation"]
    assert any("likely hand-written assembly" in check for check in idea["checks"])
    assert "explicit_bzero` or `memset_explicit`" in idea["recommendation"] and \
        "a form the compiler cannot drop" not in idea["recommendation"]
    assert "967,831 operations" in tree["title"]
    # the digests are entered from a loop of the program (a function of the executable
    # entered once per buffer size, calling through its PLT once per digest): keeping the
    # context is that caller's change, the allocator inside the tree the library's: the
    # context's own allocation and release (EVP_MD_CTX_new's CRYPTO_zalloc, EVP_MD_CTX_free's
    # CRYPTO_free, down to malloc and free) go with the reuse, the provider context's
    # (entered at its newctx and at CRYPTO_clear_free) stay the library's; each once
    assert "entered from `<unknown_13>` in openssl (itself entered 6 times; 1.00 calls per " \
           "operation), outside libcrypto.so.3" in tree["recommendation"]
    assert "Of the allocator's 445 instructions per operation, reuse removes the 218 the " \
           "create/destroy pairs' members make themselves on every entry (`EVP_MD_CTX_new`, " \
           "`EVP_MD_CTX_free`" in tree["recommendation"]
    assert "the other 227 begin at `<unknown_19>`, `CRYPTO_clear_free`" in tree["recommendation"]
    assert "keeping the context across operations (which removes the pairs' 218 allocator " \
           "instructions per operation)" in tree["recommendation"]
    assert "(the other allocator calls, 227 instructions per operation, the small wrappers) " \
           "is libcrypto.so.3's" in tree["recommendation"]
    assert "Reuse also removes" not in tree["recommendation"]
    assert not set(idea["pcs"]) & set(tree["pcs"])
    # ...and its per-call figures are net of the rows other ideas count: OPENSSL_cleanse's
    # whole-function 48.3 instructions per call (mostly the store loop) is not quoted, and
    # SHA256_Final's byte-swapped store with the 8-word loop that does nothing else is the
    # swap idea's whole (11 rows a word): none of the loop's rows is a site of the tree, and
    # SHA256_Final's 74 instructions per call with the loop control is no longer quoted
    said = " ".join([tree["claim"], *tree["checks"]])
    assert "OPENSSL_cleanse (3× per operation, 48.3" not in said
    swap = next(m for m in mechanisms(workload, "byte-swap-store"))
    assert len(swap.sites[0].pcs) == 11
    assert not set(swap.sites[0].pcs) & {int(pc, 16) for pc in tree["pcs"]}
    assert "SHA256_Final (1× per operation, 74" not in said
    # the AES-GCM tree: the AES key expansion and the GHASH key-power table (each the first
    # routine of a hidden label covering several, once per operation) are key set-up, and
    # two members make the lookups of the strcmp idea, which names the tree back
    aes = next(i for i in report["ideas"] if "302,607 operations" in i["title"])
    assert "<unknown_05> (166 instructions per call), <unknown_26> (74 instructions per " \
           "call)" in aes["claim"]
    assert "set the key once" in aes["recommendation"]
    assert f"26.0 by <unknown_23> (2.0× per operation, 8 keys) and <unknown_21> (3.0× per " \
           f"operation, 5 keys), counted in `{strcmp.id}`" in aes["claim"]
    lookups = next(i for i in report["ideas"] if strcmp.id in i["evidence"])
    assert f"26.0 constant-key lookups in each of the 302,607 operations of `{aes['mechanisms'][0]}`" in \
        lookups["claim"]
    # the upside counts what the advice deletes (the allocator calls), not call overhead
    assert "(the part of it the recommendation deletes)" in tree["upside_how"]
    # -Bsymbolic-functions binds only the library's own functions; strcmp is the C library's
    idea = next(i for i in report["ideas"] if plt.id in i["evidence"])
    assert "go into other modules (" in idea["claim"] and "malloc in libc.so.6" in idea["claim"]
    assert "(strcmp (7,875,654)" in idea["claim"] and "counted with those routines' ideas, not here" \
        in idea["claim"]
    assert "do nothing for calls into other libraries" in idea["recommendation"]
    assert not [i for i in report["ideas"] if "tuned variant" in i["claim"]]


def test_pigz_hash_chain_is_the_chase(analysed):
    """README: longest_match (`<unknown_01>`, 0.58) walks prev[cur_match & wmask]; the
    locks and outline atomics are real but tiny (shares around 1e-6)."""
    workload, report, _md = analysed("pigz")
    chase = [m for m in mechanisms(workload, "pointer-chase") if "<unknown_01>" in m.functions]
    assert chase and chase[0].share > 0.3
    assert any(chase[0].id in i["evidence"] and i["category"] == "dependent-load"
               for i in report["ideas"])
    assert not [i for i in report["ideas"] if i["category"].startswith("atomic")]
    # the step's levers, from the exact counts: 79% of the candidates fail the first byte
    # compare (scan_end), the next compare reads the adjacent byte (one ldrh), the 8x
    # unrolled match extension belongs to the walk, 16-bit links bound prev[] to 128 KiB
    figures = {x.name: x.value for x in chase[0].metrics}
    assert figures["rejected at the first compare"] == pytest.approx(79.0, abs=0.5)
    assert figures["extension steps"] == 7 and figures["table bound"] == 128 * 1024
    (idea,) = [i for i in report["ideas"] if chase[0].id in i["evidence"]]
    assert "one `ldrh`" in idea["recommendation"] and "8 bytes per step" in idea["recommendation"]
    assert "not DRAM misses" in idea["recommendation"]
    # the walk is entered by `b` at 0x5502983b24 (2,158,432 runs) at the candidate test,
    # which the budget's `b.eq` also falls into: once per call, so scan[0] and scan[1]
    # (`ldrb w3, [x13]` at 0x5502983b6c, 3,748,137 runs; 0x5502983b7c, 2,371,698) change on
    # more than half of their runs and are no recomputed work; nor, without a load, is the
    # index alone
    profile = workload.profile
    facts = code_facts(profile)
    (walk,) = [loop for loop in natural_loops.loops(profile, facts, profile.function)
               if profile.row_of(0x5502983b40) in loop.rows]
    assert natural_loops.entry_runs(profile, facts.code.op, walk.body) == 2_158_432
    assert not any(c.startswith(invariant_work.CHECK) for c in chase[0].checks)


def test_xz_match_finder(analysed):
    """README: the match finder is reached through function pointers (`blr x2`, 6.9 million
    calls): a function-pointer call, not interpreter dispatch; the binary-tree descent
    (`<unknown_02>`) is a loop-carried chain; no PLT idea (one hot stub, 1.7 M calls)."""
    workload, report, _md = analysed("xz")
    assert not mechanisms(workload, "dispatch")
    calls = [m for m in mechanisms(workload, "indirect-call") if "<unknown_09>" in m.functions]
    assert calls and {x.name: x.value for x in calls[0].metrics}["calls"] == 6_906_040
    assert any(i["category"] == "dependent-load" and "<unknown_02>" in i["title"]
               for i in report["ideas"])
    # the tree walk is inlined into the find and the skip function (same code, other
    # registers and schedule): one mechanism with both sites, one idea
    walk = [m for m in mechanisms(workload, "pointer-chase") if "<unknown_02>" in m.functions]
    assert len(walk) == 1 and {"<unknown_02>", "<unknown_04>"} <= set(walk[0].functions)
    assert walk[0].share == pytest.approx(sum(s.share for s in walk[0].sites))
    (idea,) = [i for i in report["ideas"] if i["category"] == "dependent-load"]
    # 6.64 steps per call: the walk's budget rarely ends it, so lowering it is not advised
    assert "lower the step budget" not in idea["recommendation"]
    assert "prefetch the head of the next walk" in idea["recommendation"]
    # w7 (cyclic_size) bounds the walk and wraps the node index: 8 × w7 bytes, set at run
    # time; neither unbounded nor "little to gain if it hits L1"
    assert "at most w7 entries of 8 bytes (8 × w7 bytes)" in idea["recommendation"]
    assert "Nothing in the code bounds" not in idea["recommendation"]
    assert "little to gain" not in idea["recommendation"]
    # ...and the coverage table credits the idea to both functions holding a copy
    table = {r["name"]: r for r in report["run"]["coverage"]["table"]}
    assert table["<unknown_04>"]["status"] == "idea" == table["<unknown_02>"]["status"]
    assert not [i for i in report["ideas"] if i["category"] == "call-overhead"]
    # the range encoder reloads range ([x0, #0x10]) with no store between: a missed CSE
    (state,) = [i for i in report["ideas"] if "Loop state kept in memory" in i["title"]]
    assert "[x0, #0x10] is loaded again with no store of any kind between" in state["claim"]
    assert "0x55028a6bf8" in state["claim"]


def test_bzip2_byte_work(analysed):
    """The move-to-front search shifts one byte per step (<unknown_01>); the block sort's
    compare (<unknown_03>) is an unrolled byte-by-byte compare; no chases."""
    workload, report, _md = analysed("bzip2")
    loop = [m for m in mechanisms(workload, "byte-loop") if "<unknown_01>" in m.functions]
    assert loop and {x.name: x.value for x in loop[0].metrics}["iterations per entry"] >= 8
    chain = [m for m in mechanisms(workload, "byte-compare") if "<unknown_03>" in m.functions]
    assert chain
    cited = set(idea_mechs(report))
    assert loop[0].id in cited and chain[0].id in cited
    assert not [i for i in report["ideas"] if i["category"] == "dependent-load"]


def test_mechanisms_resolve_as_evidence(analysed):
    from pcscope.core.evidence import EvidenceStore

    workload, report, _md = analysed("python")
    store = EvidenceStore(workload)
    for mech in idea_mechs(report):
        evidence = store.resolve(mech)
        assert evidence.kind == "mech" and evidence.pcs
        assert np.isin(np.array(evidence.pcs, dtype=np.uint64), workload.profile.pc).all()


def test_chase_advice_follows_the_walk_length_and_the_guides() -> None:
    """A long walk is capped first, a short one is about each step's miss; next-node
    prefetching is never offered as the fix (the guides correct that)."""
    from pcscope.core.backends.advice import _chase_levers, advise

    long_walk = _chase_levers(23.0, None, None)
    assert "cap it (" in long_walk and "first" in long_walk
    assert "lower the step budget the loop already has (w6" in _chase_levers(23.0, "w6", None)
    assert "capping it saves little" in _chase_levers(4.1, None, None)
    for per_call in (23.0, 4.1, None):
        figures = {"chain steps": 1e6, **({"steps per call": per_call} if per_call else {})}
        m = {"id": "mech:pointer-chase:0x10", "kind": "pointer-chase", "category": "x",
             "share": 0.5, "functions": ["f"], "checks": [], "values": [],
             "metrics": [{"name": k, "value": v, "unit": "", "how": ""}
                         for k, v in figures.items()],
             "site_pcs": [(0x10,)], "sites": 1}
        advice = advise(m, "executions", None)
        assert advice is not None
        assert "as soon as its address is known" not in advice.recommendation
        assert "several hops ahead" in advice.recommendation


@pytest.mark.parametrize("name", NAMES)
def test_every_top_function_without_an_idea_says_what_its_code_is(analysed, name):
    """The biggest hot code never goes unexplained: the coverage table describes each top
    function without an idea from its instructions (crypto, SIMD, FP, or the scalar mix and
    the measurement that decides)."""
    _workload, report, markdown = analysed(name)
    table = report["run"]["coverage"]["table"]
    for row in (r for r in table if r["what"] == "function"):
        assert bool(row["code"]) == (row["status"] != "idea"), row
        if row["code"]:
            assert row["code"] in markdown
    # the measurement that decides is said once, not in every row
    assert markdown.count("BR_MIS_PRED_RETIRED or SPE) decide") <= 1
