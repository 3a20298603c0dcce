"""Which bundled guide sections back each idea category and each mechanism kind: the one
table the offline analyst's rules, the planner and the guides' README read.

Each entry lists section IDs of the bundled guides (pcscope/samples/guides), most relevant
first: the uArch section that explains the behaviour, then the software optimization
section that fixes it, then further reading. Readers that fetch only a few take the first
ones. When a user's guides lack these IDs, callers search the guides by topic instead.
"""

from __future__ import annotations

U = "guide:uarch/"
S = "guide:swopt/"

CATEGORY_SECTIONS: dict[str, tuple[str, ...]] = {
    "indirect-branch": (
        U + "branch-prediction/indirect-branches", S + "branches/devirtualization",
        S + "branches/interpreter-dispatch", U + "calls-and-returns/plt-stubs",
        S + "jit-code/inline-caches"),
    "branch-mispredict": (
        U + "branch-prediction/conditional-branches", S + "branches/branchless-code",
        U + "branch-prediction/mispredict-penalty", S + "code-layout/profile-guided-optimization"),
    "atomic-llsc": (
        U + "atomics/exclusive-monitor", S + "synchronization/atomic-instruction-choice",
        S + "compiler-flags/lse-atomics-flags", U + "atomics/lse-atomics",
        U + "atomics/128-bit-atomics"),
    "atomic-contention": (
        U + "atomics/atomic-contention", S + "synchronization/contention-reduction",
        S + "synchronization/false-sharing-and-padding", U + "memory-hierarchy/cache-line-sizes"),
    "barrier": (
        U + "memory-ordering/data-barriers", S + "synchronization/barrier-reduction",
        S + "synchronization/acquire-and-release", U + "memory-ordering/instruction-barrier"),
    "acquire-release": (
        U + "memory-ordering/acquire-and-release", S + "synchronization/acquire-and-release",
        S + "compiler-flags/target-selection"),
    "dependent-load": (
        U + "load-and-store-unit/dependent-loads", S + "memory-access/pointer-chasing",
        S + "memory-access/software-prefetch", S + "memory-access/data-layout-for-locality"),
    "cache-miss": (
        U + "memory-hierarchy/cache-misses", S + "memory-access/software-prefetch",
        S + "memory-access/data-layout-for-locality", U + "memory-hierarchy/hardware-prefetchers",
        U + "memory-hierarchy/cache-hierarchy"),
    "tlb-miss": (
        U + "memory-hierarchy/tlb-hierarchy", S + "memory-access/huge-pages-for-data",
        S + "code-layout/huge-pages-for-code"),
    "store-forwarding": (
        U + "load-and-store-unit/store-to-load-forwarding",
        S + "memory-access/store-forwarding-fixes", U + "load-and-store-unit/split-accesses"),
    "division": (
        U + "execution-units/integer-division", S + "arithmetic/division-by-constants",
        S + "arithmetic/division-hoisting", U + "execution-units/fp-divide-and-square-root"),
    "spin-wait": (
        U + "atomics/spin-wait-loops", S + "synchronization/spin-wait-back-off",
        U + "memory-ordering/instruction-barrier"),
    "call-overhead": (
        U + "calls-and-returns/call-overhead", S + "calls/inlining-and-lto",
        S + "compiler-flags/per-function-overhead-flags", U + "calls-and-returns/plt-stubs",
        S + "calls/plt-avoidance", U + "calls-and-returns/veneers", S + "calls/veneer-avoidance"),
    "memcpy": (
        U + "memory-copy-and-set/memcpy-and-memmove", S + "copying-and-zeroing/memcpy-choices",
        S + "copying-and-zeroing/glibc-string-variants", U + "memory-copy-and-set/memset",
        S + "copying-and-zeroing/memset-choices"),
    "fp-dependency": (
        U + "execution-units/fp-dependency-chains", S + "arithmetic/fp-accumulation-chains",
        U + "execution-units/simd-and-fp-pipes"),
    "vectorization": (
        U + "execution-units/simd-and-fp-pipes", S + "vectorization/auto-vectorization",
        S + "vectorization/neon-and-sve", S + "vectorization/aliasing-and-restrict"),
    "register-spill": (
        U + "load-and-store-unit/load-to-use-latency", S + "compiler-flags/optimization-levels",
        S + "vectorization/auto-vectorization"),
    "state-in-memory": (
        U + "load-and-store-unit/store-to-load-forwarding", S + "vectorization/aliasing-and-restrict",
        U + "load-and-store-unit/load-to-use-latency"),
    "string-routine": (
        U + "calls-and-returns/call-overhead", S + "copying-and-zeroing/glibc-string-variants",
        S + "calls/inlining-and-lto"),
    "hardening": (
        U + "front-end/front-end-stalls", S + "compiler-flags/per-function-overhead-flags",
        S + "calls/inlining-and-lto"),
    "narrow-access": (
        U + "load-and-store-unit/store-buffer", S + "vectorization/neon-and-sve",
        S + "memory-access/alignment"),
    "loop-overhead": (
        U + "front-end/instruction-fetch", S + "compiler-flags/optimization-levels",
        U + "pipeline/out-of-order-window"),
    "other": (
        U + "front-end/front-end-stalls", S + "code-layout/bolt",
        U + "measurement/top-down-method", U + "front-end/code-footprint",
        S + "code-layout/huge-pages-for-code", S + "jit-code/code-installation"),
}

# Mechanism kinds (pcscope.core.mechanisms.Mechanism.kind) whose fix is narrower than their
# category's: the sections that speak to that mechanism itself.
MECHANISM_SECTIONS: dict[str, tuple[str, ...]] = {
    "dispatch": (
        U + "branch-prediction/indirect-branches", S + "branches/interpreter-dispatch",
        S + "code-layout/profile-guided-optimization"),
    "plt": (
        U + "calls-and-returns/plt-stubs", S + "calls/plt-avoidance",
        S + "compiler-flags/per-function-overhead-flags"),
    "outline-atomic": (
        U + "atomics/lse-atomics", S + "compiler-flags/lse-atomics-flags",
        S + "synchronization/atomic-instruction-choice"),
    "llsc": (
        U + "atomics/exclusive-monitor", S + "synchronization/atomic-instruction-choice",
        S + "compiler-flags/lse-atomics-flags", U + "atomics/128-bit-atomics"),
    "spin-wait": (
        U + "atomics/spin-wait-loops", S + "synchronization/spin-wait-back-off",
        S + "synchronization/contention-reduction"),
    "pointer-chase": (
        U + "load-and-store-unit/dependent-loads", S + "memory-access/pointer-chasing",
        S + "memory-access/data-layout-for-locality"),
    "byte-loop": (
        U + "execution-units/simd-and-fp-pipes", S + "vectorization/auto-vectorization",
        S + "copying-and-zeroing/glibc-string-variants", S + "vectorization/neon-and-sve"),
    "division": (
        U + "execution-units/integer-division", S + "arithmetic/division-by-constants",
        S + "arithmetic/division-hoisting"),
    "barrier": (
        U + "memory-ordering/data-barriers", S + "synchronization/barrier-reduction",
        S + "synchronization/acquire-and-release"),
    "fp-division": (
        U + "execution-units/fp-divide-and-square-root", S + "arithmetic/division-hoisting"),
    "libc-routine": (
        U + "memory-copy-and-set/memcpy-and-memmove", S + "copying-and-zeroing/glibc-string-variants",
        S + "copying-and-zeroing/memcpy-choices"),
    "spill-block": (  # a reload costs its load-to-use latency; it forwards (same slot, width)
        U + "load-and-store-unit/load-to-use-latency", S + "vectorization/auto-vectorization",
        S + "vectorization/neon-and-sve"),
    "return-zeroing": (
        U + "front-end/front-end-stalls", S + "compiler-flags/per-function-overhead-flags",
        S + "calls/inlining-and-lto"),
    "table-crc": (
        U + "execution-units/simd-and-fp-pipes", S + "vectorization/neon-and-sve",
        S + "compiler-flags/target-selection"),
    "per-operation": (
        U + "calls-and-returns/call-overhead", S + "calls/inlining-and-lto",
        S + "compiler-flags/per-function-overhead-flags"),
    "memory-state": (
        U + "load-and-store-unit/store-to-load-forwarding", S + "vectorization/aliasing-and-restrict",
        S + "memory-access/store-forwarding-fixes"),
    "jit": (
        U + "front-end/code-footprint", S + "jit-code/inline-caches",
        S + "jit-code/code-installation"),
    "byte-swap-store": (
        U + "load-and-store-unit/store-buffer", S + "vectorization/neon-and-sve",
        S + "memory-access/alignment"),
    "store-loop": (U + "memory-copy-and-set/memset", S + "copying-and-zeroing/memset-choices"),
    "gather-branch": (
        U + "branch-prediction/conditional-branches", S + "branches/branchless-code",
        S + "memory-access/software-prefetch", U + "load-and-store-unit/dependent-loads"),
    "struct-relaxation": (
        U + "execution-units/simd-and-fp-pipes", S + "memory-access/data-layout-for-locality",
        S + "vectorization/neon-and-sve", S + "vectorization/auto-vectorization"),
    "fixed-trip-sum": (
        U + "front-end/instruction-fetch", S + "compiler-flags/optimization-levels",
        U + "pipeline/out-of-order-window"),
}


def sections_for(category: str, mechanism_kind: str | None = None) -> tuple[str, ...]:
    """The sections for a mechanism kind when the table has it, else for its category
    (``other`` for an unknown category)."""
    if mechanism_kind in MECHANISM_SECTIONS:
        return MECHANISM_SECTIONS[mechanism_kind]
    return CATEGORY_SECTIONS.get(category, CATEGORY_SECTIONS["other"])
