"""The modelled penalty per kind: what fraction of a mechanism's own cycles a fix for it
typically gives back. One table, used both to rank what the planner examines ((own share +
what its measured ALP figures add) × penalty, candidates.py) and to rank ideas (own share ×
penalty × confidence, the expected upside).

Rows are keyed by idea category: a mechanism's kind maps to one category (``dispatch`` →
``indirect-branch``, ``llsc`` → ``atomic-llsc``, ``plt`` → ``call-overhead``, …), and an idea
carries its category, so both look up the same row. ``unexplained`` is hot code in which no
mechanism and no pattern was found: it still gets a look, ranked last for its share.

The fractions are a model, not a measurement: each states the usual fix and why it gives
back about that much on AArch64 cores; the guides hold the longer argument.
"""

from __future__ import annotations

from dataclasses import dataclass

UNEXPLAINED = "unexplained"


@dataclass(frozen=True)
class Penalty:
    fraction: float  # of the own cycles a fix is modelled to give back
    why: str  # the fix and the reason, one line


PENALTIES: dict[str, Penalty] = {
    "indirect-branch": Penalty(0.35, "threaded dispatch or devirtualisation removes most "
                                     "mispredicted indirect branches"),
    "branch-mispredict": Penalty(0.30, "branchless selects or reordered tests remove most "
                                       "flush cycles"),
    "atomic-llsc": Penalty(0.50, "one LSE instruction (cas/ldadd) replaces an exclusive "
                                 "retry loop"),
    "atomic-contention": Penalty(0.40, "sharded or batched updates cut line ping-pong"),
    "barrier": Penalty(0.50, "a weaker or removed barrier stops draining the pipeline"),
    "acquire-release": Penalty(0.30, "ldapr or relaxed ordering where the algorithm allows"),
    "dependent-load": Penalty(0.20, "prefetch or layout change shortens a serial load chain"),
    "cache-miss": Penalty(0.30, "prefetch, blocking or a denser layout"),
    "tlb-miss": Penalty(0.30, "huge pages or a denser layout"),
    "store-forwarding": Penalty(0.30, "keep the value in a register or match access sizes"),
    "division": Penalty(0.40, "multiply by a reciprocal or hoist the division"),
    "spin-wait": Penalty(0.50, "wfe/yield back-off or a blocking wait"),
    "call-overhead": Penalty(0.40, "inlining or direct binding removes call and stub work"),
    "memcpy": Penalty(0.30, "a size-specialised or avoided copy"),
    "fp-dependency": Penalty(0.25, "more accumulators break the dependency chain"),
    "vectorization": Penalty(0.50, "a vectorised loop handles several elements per "
                                   "instruction"),
    "register-spill": Penalty(0.30, "fewer live values (less unrolling, vector accumulators) "
                                    "remove most spill stores and reloads"),
    "state-in-memory": Penalty(0.30, "locals the compiler keeps in registers remove the field "
                                     "loads and stores and their round trip through memory"),
    "string-routine": Penalty(0.30, "fewer calls (a lookup done once, a kept length) or "
                                    "word-wise compares"),
    "hardening": Penalty(0.30, "exempting the hot small functions, where policy allows, "
                               "removes the instructions the option adds to them"),
    "narrow-access": Penalty(0.50, "one wide access (with rev for byte order) replaces the "
                                   "narrow ones and their shifts"),
    "loop-overhead": Penalty(0.15, "full unrolling removes the compare and branch, a small "
                                   "part of each trip"),
    "other": Penalty(0.15, "a local rewrite; no model for its kind"),
    UNEXPLAINED: Penalty(0.10, "no mechanism found: a look may still find one"),
}


def penalty(category: str) -> Penalty:
    """The row of ``category`` (``other`` for a category the table does not know)."""
    return PENALTIES.get(category, PENALTIES["other"])
