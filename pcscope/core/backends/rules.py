"""The offline analyst's rules catalog: what each rule reports, what to try, which guide
sections back it, and the thresholds that make a measured figure material.

Thresholds follow the bundled guides' own ranges (pcscope/samples/guides): a mispredict
rate above ~5% is material and above ~15% severe, so rules fire from 10%; an L1-hitting
load takes ~4 cycles, so an average latency of 15+ cycles with 10%+ L1D misses is a
miss; divides take ~7-20 cycles, so 15+ cycles is the slow end; ordering waits of "tens of
cycles" start at 10. Guide section IDs come from the category and mechanism table
(pcscope.core.guide_map); when a user's guides lack them the analyst searches by ``query``.

Each measured rule reads every ALP field (formats.md §2) that can carry its signal, fires
when any of them is past the threshold, and names the fields it read (detectors.py). One
physical quantity, one threshold, whichever field shows it:

| rule | fields read | threshold, and why |
| --- | --- | --- |
| indirect/conditional mispredict | mispredicted / executed; without `executed`, mispredicted / iterations | MISPREDICT 10% per execution (per iteration is a lower bound for a branch run once per iteration) |
| pointer-chase, stream-miss | latency: `mem.avg_latency`, else execute latency (complete - issue); misses: L1D rate, else the higher of the L2/LLC rates (each missed L1D first); no miss count at all: latency with no store to wait for | MISS_LATENCY 15 cycles (an L1 hit is ~4) and MISS_RATE 10% |
| tlb-walk | `mem.tlb_miss` / accesses and the latency above | TLB_RATE 5% with MISS_LATENCY |
| forwarding-fail | `mem.store_forwarded` / accesses when counted; latency (either field) of a load that hits L1D after an overlapping store | FORWARD_RATE 10%, FORWARD_LATENCY 10 cycles (a forwarded load takes ~4-5) |
| llsc-retry | status branch taken rate (cbnz retries when taken, cbz when not); pair executions per loop iteration (n attempts = 1 - 1/n retried); exclusive load latency | RETRY_RATE 5% for both retry fields; ATOMIC_LATENCY 40 cycles |
| atomic-contention | latency (either field), with or without L1D misses (a far atomic counts none) | ATOMIC_LATENCY 40 cycles (an L2 hit is ~10-15: 40+ means another core's line) |
| barrier-wait | its issue wait, its execute latency, the next memory op's issue wait | ORDER_WAIT 10 cycles each (a barrier with nothing to drain takes ~2) |
| slow-divide | execute latency; the next consumer's issue wait less the divide's own | DIVIDE_LATENCY 15 cycles each (the same latency, seen from the consumer) |
| spin-poll | poll-load executions per loop iteration; polls per exit from the branch counts (1 / (1 - back-edge taken rate), or exit branch executed / taken) | SPIN_POLLS 2 for both (a free lock is read once) |
| fp-chain | mean issue wait of the chained ops; mean execute latency beyond the op's own (FP_LATENCY: an op that issues before its inputs are ready waits while executing) | FP_CHAIN_WAIT 3 cycles each |
"""

from __future__ import annotations

from dataclasses import dataclass

from pcscope.core.contract.findings import Target
from pcscope.core.guide_map import sections_for

MISPREDICT = 0.10  # branch mispredict rate worth an idea
MISS_RATE = 0.10  # L1D miss rate of a missing load
MISS_LATENCY = 15.0  # cycles: a load this slow on average is not hitting L1
TLB_RATE = 0.05  # DTLB misses per access dominating a load
FORWARD_RATE = 0.10  # at or below: the load (almost) never forwards
FORWARD_LATENCY = 10.0  # cycles of a load that waits for stores to drain
RETRY_RATE = 0.05  # LL/SC retry branch taken rate
ATOMIC_LATENCY = 40.0  # cycles of an atomic whose line comes from another core
ATOMIC_MISS = 0.25  # L1D miss rate of an atomic whose line moves (named in the claim)
ORDER_WAIT = 10.0  # issue wait (cycles) held by a barrier
DIVIDE_LATENCY = 15.0  # execute latency (cycles) of a slow divide
SPIN_POLLS = 2.0  # poll-loop loads per outer iteration
FP_CHAIN_WAIT = 3.0  # issue wait (cycles) of a chained FP accumulation
# Execute latency (cycles) of an FP operation whose inputs are ready (Neoverse-class cores:
# FMA 4, FMUL 3, FADD 2): what a chained op's execute latency is measured against.
FP_LATENCY = {"fmadd": 4.0, "fmsub": 4.0, "fnmadd": 4.0, "fnmsub": 4.0, "fmla": 4.0,
              "fmls": 4.0, "fmul": 3.0, "fadd": 2.0, "fsub": 2.0}
HOT_PC = 0.002  # share of the total a PC (or its loop) needs for a profile-only idea
HOT_WINDOW = 0.01  # share of the total its window needs


@dataclass(frozen=True)
class Rule:
    name: str
    category: str
    target: Target
    title: str  # of a measured idea; "{asm}" and "{fn}" are filled in
    guess: str  # of a profile-only idea (nothing measured yet)
    recommendation: str
    guides: tuple[str, ...]  # section IDs, most relevant first (guide_map.sections_for)
    query: str  # guide search when the sections are absent
    confirm: str = ""  # the measurement that would confirm a profile-only idea
    question: str = ""  # asked one wave deeper ("{pc}" filled in)


CATALOG: dict[str, Rule] = {r.name: r for r in (
    Rule(
        "indirect-mispredict", "indirect-branch", "software",
        "Mispredicting indirect branch {asm} in {fn}",
        "Hot indirect branch {asm} in {fn}",
        "Give the site fewer targets per history: devirtualize (final classes, LTO with "
        "whole-program visibility) or add a guarded direct call for the dominant target "
        "(PGO indirect-call promotion); for opcode dispatch use threaded dispatch (computed "
        "goto) so each handler ends in its own br; batch objects by type so a loop sees one "
        "target at a time.",
        sections_for("indirect-branch"),
        "indirect branch mispredict devirtualization dispatch",
        confirm="the ALP (or SPE) mispredict rate of this br/blr; above ~5% it is material",
        question="Which load supplies the branch target of {pc}?",
    ),
    Rule(
        "conditional-mispredict", "branch-mispredict", "software",
        "Data-dependent branch {asm} mispredicts in {fn}",
        "Hot conditional branch {asm} in {fn}",
        "Make the decision branchless when both sides are cheap (csel/cset/csinc or a mask, "
        "e.g. `x = c ? a : b`; Clang `__builtin_unpredictable`), or sort/partition the data "
        "so the outcome becomes regular; let PGO lay out the branch if it is biased per input.",
        sections_for("branch-mispredict"),
        "conditional branch mispredict branchless csel",
    ),
    Rule(
        "pointer-chase", "dependent-load", "software",
        "Pointer chase {asm} misses the cache in {fn}",
        "Dependent load {asm} in {fn}",
        "Break the serial chain: store nodes in arrays and link by index (or use B-trees / "
        "open addressing), allocate nodes in traversal order, walk several independent chains "
        "per loop so their misses overlap, or keep jump pointers to prefetch several hops ahead "
        "(prefetching only the next node gains almost nothing: its address arrives with the "
        "load that needs it).",
        sections_for("dependent-load", "pointer-chase"),
        "dependent loads pointer chasing prefetch",
        confirm="the ALP (or SPE) L1D/L2 miss rate and average latency of this load; above ~10% "
        "misses and ~15 cycles the chain serialises misses",
        question="Which load produces the address used by {pc}?",
    ),
    Rule(
        "stream-miss", "cache-miss", "software",
        "Load {asm} misses the cache without a dependency chain in {fn}",
        "Hot load {asm} in {fn}",
        "The addresses are computable ahead of time: prefetch a few hundred bytes ahead "
        "(`prfm pldl2keep, [xN, #256]`, distance = miss latency / cycles per iteration), "
        "make the access pattern sequential enough for the hardware prefetcher, and shrink "
        "the data touched per element (structure of arrays, narrower types).",
        sections_for("cache-miss"),
        "cache misses software prefetch data layout",
    ),
    Rule(
        "tlb-walk", "tlb-miss", "software",
        "Load {asm} is dominated by DTLB misses in {fn}",
        "Hot load {asm} in {fn}",
        "Increase TLB reach: back the region with huge pages (THP `madvise(MADV_HUGEPAGE)` or "
        "hugetlbfs, 2 MiB-aligned allocations) and touch fewer pages per operation (pack hot "
        "data, avoid page-sized strides).",
        sections_for("tlb-miss"),
        "tlb miss huge pages",
    ),
    Rule(
        "forwarding-fail", "store-forwarding", "software",
        "Load {asm} fails store-to-load forwarding in {fn}",
        "Load after store {asm} in {fn}",
        "Load with the width and address of the store that wrote the data (or keep the value "
        "in a register: build it with `bfi`/`orr` instead of through memory); avoid a narrow "
        "store followed by a wider overlapping load.",
        sections_for("store-forwarding"),
        "store to load forwarding",
    ),
    Rule(
        "llsc-retry", "atomic-llsc", "compiler",
        "Exclusive-pair retry loop {asm} in {fn}",
        "Hot exclusive pair {asm} in {fn}",
        "Replace the ldxr/stxr loop with a single LSE atomic (`ldadd`, `swp`, `cas`; "
        "`__atomic_fetch_add`) by building with `-march=armv8.1-a` (or a suitable `-mcpu`), "
        "or `-moutline-atomics` for binaries that must run on older cores; reduce sharing of "
        "the line (per-thread counters, padding to the cache line).",
        sections_for("atomic-llsc", "llsc"),
        "exclusive monitor ldxr stxr lse atomics",
        confirm="the ALP retry-branch taken rate and latency of the exclusive pair",
    ),
    Rule(
        "atomic-contention", "atomic-contention", "software",
        "Contended atomic {asm} in {fn}",
        "Hot atomic {asm} in {fn}",
        "The line bounces between cores: shard the counter per thread or per core and combine "
        "on read, pad and align the shared variable to its own line (64 B on Neoverse cores, 128 B "
        "where adjacent-line prefetch pairs lines; the size is in CTR_EL0), "
        "use the weakest correct ordering (no `al` suffix for statistics), batch updates.",
        sections_for("atomic-contention"),
        "atomic contention false sharing",
        confirm="the ALP latency and L1D misses of this atomic; hundreds of cycles mean the "
        "line comes from another core",
    ),
    Rule(
        "barrier-wait", "barrier", "software",
        "Barrier {asm} holds the pipeline in {fn}",
        "Hot barrier {asm} in {fn}",
        "Use the weakest ordering that is correct: `stlr` to publish and `ldar`/`ldapr` to "
        "consume instead of a full `dmb ish` (`dmb ishst` orders stores against later stores "
        "only, so it cannot publish; `dmb ishld` orders earlier loads), and one fence per batch "
        "instead of one per element.",
        sections_for("barrier", "barrier"),
        "data barrier dmb issue wait acquire release",
        confirm="the ALP issue wait and execute latency of the barrier and the issue wait of "
        "the memory op behind it",
    ),
    Rule(
        "slow-fp-divide", "division", "software",
        "Floating-point divide {asm} on the critical path in {fn}",
        "Hot floating-point divide {asm} in {fn}",
        "Hoist a loop-invariant divisor as `r = 1.0 / d` and multiply, or use `frecpe`/"
        "`frsqrte` plus Newton steps (`frecps`/`frsqrts`) where the precision allows; "
        "`-freciprocal-math` lets the compiler do the first.",
        sections_for("division", "fp-division"),
        "floating point division reciprocal hoisting",
        confirm="the ALP execute latency of the divide and the issue wait of its consumers",
    ),
    Rule(
        "slow-divide", "division", "software",
        "Division {asm} on the critical path in {fn}",
        "Hot division {asm} in {fn}",
        "Avoid the divide: make the divisor a compile-time constant (multiply-high and shift), "
        "use a power-of-two size with a mask, or precompute a reciprocal for a loop-invariant "
        "divisor (libdivide/fastmod).",
        sections_for("division", "division"),
        "integer division reciprocal hoisting",
        confirm="the ALP execute latency of the divide and the issue wait of its consumers",
    ),
    Rule(
        "spin-poll", "spin-wait", "software",
        "Polling loop spins at {asm} in {fn}",
        "Tight polling loop at {asm} in {fn}",
        "Back off instead of polling tightly: `isb` for short waits, an `ldaxr` + `wfe` wait "
        "for longer ones (`yield` does little on cores without SMT), exponential back-off, and "
        "block in the OS (futex) after a bounded spin; shorten the lock hold time.",
        sections_for("spin-wait", "spin-wait"),
        "spin wait loop yield wfe isb back-off",
        confirm="polls per acquisition (ALP executions of the poll load per loop iteration, "
        "or 1 / (1 - taken rate) of its back-edge)",
    ),
    Rule(
        "fp-chain", "fp-dependency", "compiler",
        "Floating-point accumulation chain at {asm} in {fn}",
        "Floating-point accumulation chain at {asm} in {fn}",
        "Split the reduction into several independent accumulators combined after the loop, "
        "or allow reassociation narrowly (`-fassociative-math -fno-signed-zeros "
        "-fno-trapping-math`, `#pragma omp simd reduction(+:s)`) so the compiler does it.",
        sections_for("fp-dependency"),
        "fp dependency chain accumulators reassociation",
        confirm="the ALP issue wait of the chained instructions (about the FP latency each)",
    ),
    Rule(
        "plt-calls", "call-overhead", "compiler",
        "Hot calls through PLT stub {asm} in {fn}",
        "Hot calls through PLT stub {asm} in {fn}",
        "Make the calls direct: `-fno-plt` for calls into other shared objects, "
        "`-fvisibility=hidden` with `-fno-semantic-interposition` (or "
        "`-Wl,-Bsymbolic-functions`) for calls inside a library, LTO or static linking of the "
        "hot dependency.",
        sections_for("call-overhead", "plt"),
        "plt stubs avoidance fno-plt",
        confirm="calls per second through the stub and its indirect mispredict rate (ALP/SPE)",
    ),
    Rule(
        "libc-routine", "string-routine", "software",
        "Time in a C-library routine {asm} in {fn}",
        "Time in a C-library routine {asm} in {fn}",
        "Call the routine less: cache results, compare lengths or hashes first, intern "
        "strings.",
        sections_for("string-routine", "libc-routine"),
        "memcpy strcmp c library routine calls",
        confirm="the routine's callers (perf record -g) and bytes per call",
    ),
    Rule(
        "spill-block", "register-spill", "compiler",
        "Register spills in a hot block at {asm} in {fn}",
        "Register spills in a hot block at {asm} in {fn}",
        "Give the block fewer live values: unroll less, keep accumulations in vector "
        "registers, or split the loop.",
        sections_for("register-spill", "spill-block"),
        "register pressure spills unrolling",
        confirm="the block's instructions and cycles per run after unrolling less "
        "(`perf stat`), and Clang's `-Rpass-missed=regalloc` remarks",
    ),
    Rule(
        "return-zeroing", "hardening", "compiler",
        "Registers cleared on return at {asm} in {fn}",
        "Registers cleared on return at {asm} in {fn}",
        "If the threat model allows, exempt the hot small functions "
        "(`__attribute__((zero_call_used_regs(\"skip\")))`) or use a narrower mode; inline "
        "them (LTO) so fewer returns run.",
        sections_for("hardening", "return-zeroing"),
        "zero call used registers hardening flag return",
        confirm="the build flags (`-fzero-call-used-regs`), and instructions per operation "
        "with the hot functions exempted",
    ),
    Rule(
        "table-crc", "vectorization", "software",
        "Table-driven CRC at {asm} in {fn}",
        "Table-driven CRC at {asm} in {fn}",
        "Compute the CRC with the CRC32 instructions (`crc32x`/`crc32cx`, 8 bytes each; "
        "`__crc32d` from `<arm_acle.h>` with `-march=armv8-a+crc`) or PMULL folding.",
        sections_for("vectorization", "table-crc"),
        "crc32 instructions table lookup checksum",
        confirm="cycles per byte of the CRC loop before and after (`perf stat` on a large "
        "buffer)",
    ),
    Rule(
        "per-operation", "call-overhead", "software",
        "Per-operation call overhead at {asm} in {fn}",
        "Per-operation call overhead at {asm} in {fn}",
        "Set up once and reuse: keep the context or object across operations instead of "
        "creating, initialising and freeing it per call; pass more data per call; cache "
        "lookups; inline the small wrappers (LTO).",
        sections_for("call-overhead", "per-operation"),
        "call overhead inlining wrappers per call",
        confirm="instructions per operation at two payload sizes (`perf stat -e instructions` "
        "per operation): a constant part that does not grow with the payload is the overhead",
    ),
    Rule(
        "memory-state", "state-in-memory", "software",
        "Loop state kept in memory at {asm} in {fn}",
        "Loop state kept in memory at {asm} in {fn}",
        "Copy the fields the loop reads and updates into local variables before the loop and "
        "write them back after it, so the compiler can keep them in registers; `restrict` on "
        "pointer parameters where the function receives them.",
        sections_for("state-in-memory", "memory-state"),
        "aliasing restrict invariant fields reload store forwarding",
        confirm="the loop's instructions per iteration before and after (`perf stat -e "
        "instructions`), and the reloads' latency (SPE or ALP: a reload that waits for the "
        "store before it takes the forwarding latency)",
    ),
    Rule(
        "jit-code", "other", "software",
        "Hot JIT-generated code at {asm} in {fn}",
        "Hot JIT-generated code at {asm} in {fn}",
        "Use the JIT's own diagnostics and change the source so it can specialise.",
        sections_for("other", "jit"),
        "jit code generation diagnostics",
        confirm="the JIT's own profile of this code (deoptimisations, inline-cache states)",
    ),
    Rule(
        "byte-compare-loop", "vectorization", "software",
        "Byte-at-a-time load/compare loop at {asm} in {fn}",
        "Byte-at-a-time load/compare loop at {asm} in {fn}",
        "Process 8 or 16 bytes per step: load with `ldr x`/`ldr q`, compare words "
        "(`eor` + `rev` + `clz` to find the first difference) or SIMD (`cmeq` + `umaxv`/`shrn`), "
        "and fall back to bytes only at the end; check that the compiler can vectorize it "
        "(`-O3 -mcpu=native`, `restrict`).",
        sections_for("vectorization", "byte-loop"),
        "vectorization simd byte loop neon",
        confirm="cycles per byte and the mispredict rate of the loop's compare branch (ALP or "
        "SPE); wide compares pay off when the loop runs many bytes per call",
    ),
    Rule(
        "byte-swap-store", "narrow-access", "software",
        "Byte-by-byte big-endian store at {asm} in {fn}",
        "Byte-by-byte big-endian store at {asm} in {fn}",
        "Byte-swap in a register (`rev`/`rev32`) and store the word once.",
        sections_for("narrow-access", "byte-swap-store"),
        "byte swap rev big endian store",
        confirm="the instruction count of the function after the change (the store is "
        "exactly counted; its cycles are not)",
    ),
    Rule(
        "store-loop", "memcpy", "software",
        "Narrow store loop at {asm} in {fn}",
        "Narrow store loop at {asm} in {fn}",
        "Store 16 or 32 bytes per instruction (`stp`, `stp q`, `dc zva` for whole lines), or "
        "call the C library's `memset`.",
        sections_for("memcpy", "store-loop"),
        "memset zeroing loop stp dc zva",
        confirm="bytes per call (the loop's trips per entry) and the store bandwidth "
        "(STALL_BACKEND, SPE store latency)",
    ),
    Rule(
        "gather-branch", "branch-mispredict", "software",
        "Keys gathered through an index array and branched on at {asm} in {fn}",
        "Keys gathered through an index array and branched on at {asm} in {fn}",
        "Gather the keys into a contiguous array first (independent loads overlap) or "
        "prefetch `base[idx[i + d] + k]`, then decide branch-free; mispredicts decide which.",
        sections_for("branch-mispredict", "gather-branch"),
        "gather index array prefetch branchless partition",
        confirm="mispredicts per key of the branches on the key (BR_MIS_PRED_RETIRED, SPE or "
        "ALP) and the key loads' latency (SPE, L1D_CACHE_REFILL)",
    ),
    Rule(
        "struct-relaxation", "vectorization", "software",
        "Cost relaxation over an array of structs at {asm} in {fn}",
        "Cost relaxation over an array of structs at {asm} in {fn}",
        "Move the compared field into its own array and compare four at a time (`ldr q`, "
        "`add v.4s`, `cmhi`, `umaxv`), updating the rare winners in scalar code.",
        sections_for("vectorization", "struct-relaxation"),
        "structure of arrays layout simd compare",
        confirm="the loop's instructions per candidate before and after, and L1D refills of "
        "the field loads (L1D_CACHE_REFILL or SPE)",
    ),
    Rule(
        "fixed-trip-sum", "loop-overhead", "software",
        "Fixed-trip lookup loop at {asm} in {fn}",
        "Fixed-trip lookup loop at {asm} in {fn}",
        "Unroll the constant-trip loop fully and compute its indexes up front, or keep the "
        "sums in a table per context.",
        sections_for("loop-overhead", "fixed-trip-sum"),
        "loop unrolling constant trip count lookup table",
        confirm="the function's instructions per call before and after (`perf stat -e "
        "instructions`)",
    ),
)}


# The catalog rule whose guides, confirming measurement and category each mechanism kind
# shares (the mechanism finder's categories are read from here). Spills and loop state in
# memory are not store-forwarding (a load that fails to forward): a spill and its reload use
# one slot at one width, and loop state is reloaded at the width it was stored, so a reload
# that waits on its store forwards; what they cost is the loads and stores a register would
# not need.
MECHANISM_RULE = {
    "dispatch": "indirect-mispredict", "indirect-call": "indirect-mispredict",
    "plt": "plt-calls", "pointer-chase": "pointer-chase", "byte-loop": "byte-compare-loop",
    "byte-compare": "byte-compare-loop",
    "spin-wait": "spin-poll", "llsc": "llsc-retry", "outline-atomic": "atomic-contention",
    "libc-lock": "atomic-contention", "division": "slow-divide", "fp-division": "slow-fp-divide",
    "libc-routine": "libc-routine",
    "jit": "jit-code", "memory-state": "memory-state", "per-operation": "per-operation",
    "table-crc": "table-crc", "return-zeroing": "return-zeroing",
    "byte-swap-store": "byte-swap-store", "store-loop": "store-loop",
    "spill-block": "spill-block", "gather-branch": "gather-branch",
    "struct-relaxation": "struct-relaxation", "fixed-trip-sum": "fixed-trip-sum",
}  # fmt: skip
