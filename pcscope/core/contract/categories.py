"""The idea categories of docs/formats.md §4 (kept apart from the schema so that reading them
does not import pydantic, which start-up paths such as `pcscope open` avoid)."""

CATEGORIES = (
    "indirect-branch",
    "branch-mispredict",
    "atomic-llsc",
    "atomic-contention",
    "barrier",
    "acquire-release",
    "dependent-load",
    "cache-miss",
    "tlb-miss",
    "store-forwarding",
    "division",
    "spin-wait",
    "call-overhead",
    "memcpy",
    "fp-dependency",
    "vectorization",
    "register-spill",
    "state-in-memory",
    "string-routine",
    "hardening",
    "narrow-access",
    "loop-overhead",
    "other",
)
