"""What a bounded call returns (validated by pydantic) and the categories ideas may take."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pcscope.core.contract.categories import CATEGORIES

# One list: the tuple in categories.py. pydantic reads the Literal at run time; mypy cannot
# expand a tuple into one, so to it Category is Any.
Category = Literal[CATEGORIES]  # type: ignore[valid-type]
Target = Literal["software", "compiler", "hardware"]
Basis = Literal["measured", "predicted", "profile-only"]
TEXT_MAX = 2000  # characters of a claim, a recommendation or a summary
NOTE_MAX = 400  # characters of what an idea's numbers are
MAX_CHECKS = 64


class Finding(BaseModel):
    """One proposed idea, as a call states it. Every PC and ID is checked by validation."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=3, max_length=200)
    category: Category
    target: Target
    claim: str = Field(min_length=3, max_length=TEXT_MAX, description="what the evidence shows")
    # Said once per idea beside the claim, not inside it: the same words for every idea of a
    # profile, which would take the claim's room from what is particular to the idea.
    numbers: str = Field(
        default="", max_length=NOTE_MAX,
        description="what the idea's numbers are (exact counts, samples, cycles, a measured "
                    "record) and what they cannot tell; the claim says what would confirm it")
    recommendation: str = Field(min_length=3, max_length=TEXT_MAX, description="what to try")
    pcs: list[str] = Field(min_length=1, max_length=32, description="0x-hex PCs the idea is about")
    evidence: list[str] = Field(min_length=1, max_length=64, description="evidence IDs cited")
    confidence: float = Field(ge=0.0, le=1.0)
    basis: Basis
    # No brief quotes the checks (briefs quote claims), so they are not held to TEXT_MAX:
    # the claim's length shortens the claim, never what the analyst found.
    checks: list[str] = Field(
        default_factory=list, max_length=MAX_CHECKS,
        description="the checks on the code that passed, one statement each, and any list "
                    "the claim had to shorten, in full")
    questions: list[str] = Field(default_factory=list, max_length=5,
                                 description="open questions for a deeper call")
    removes: float | None = Field(
        default=None, gt=0.0, le=1.0,
        description="when the recommendation deletes instructions rather than removing a "
                    "stall: the fraction of the idea's own share it deletes (sizes the upside "
                    "instead of the category's modelled penalty)")


class CallOutput(BaseModel):
    """The final answer of one bounded call (the `submit_findings` tool input)."""

    model_config = ConfigDict(extra="forbid")

    findings: list[Finding] = Field(default_factory=list, max_length=16)
    summary: str = Field(default="", max_length=TEXT_MAX)
