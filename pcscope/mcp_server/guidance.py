"""What an agent is told about working with pcscope: one text for the server's
instructions, the ready prompts and the skill file."""

from __future__ import annotations

from pcscope.core.contract.categories import CATEGORIES

WORKFLOW = """\
1. Read where the time goes: `mechanisms` (pattern sites grouped into the one thing to fix,
   by their own share) and `hot_windows` (the heaviest instruction windows).
2. Anchor on the code: `window` for a whole window, `asm_around` around one PC. Pattern
   hits show as `pat:<category>:0x…` IDs beside the instructions.
3. Fetch the evidence a claim needs: `alp` for the simulator's figures at exact PCs
   (mispredict and miss rates, latencies; basis *measured*), `search`, `regex` and `group`
   over the whole workload to count how often a shape occurs, `guide` for the guide
   section that backs a recommendation, `remember` to name a set of IDs for later.
4. Submit with `submit_findings`: each finding names its PCs, cites the IDs that show it,
   a category, a target (software, compiler, hardware), a basis and a confidence. Read
   the verdict; fix and resubmit a rejected finding only with new evidence."""

IDS = """\
Evidence IDs: `pc:0x…` an instruction, `win:0x…` a window (by its first PC), `fn:<name>`
a function, `alp:0x…` the ALP (simulator) record of a PC, `pat:<category>:0x…` a pattern
hit, `mech:<kind>:0x…` a mechanism, `guide:<doc>/<section>` a guide section,
`finding:w1.cN.fM` a finding accepted earlier, `set:<name>` a remembered set. Shares are
of the profile's total samples (or cycles); a window's weight counts every instruction in
it, a mechanism's own share counts each of its instructions once."""

REJECTIONS = f"""\
A finding is rejected, with the reason returned, when it cites an ID that no tool returned
to you in this session (or that does not resolve), names a PC outside the profile or not
covered by a cited ID (cite `pc:`, `alp:`, `pat:` at that PC, or the `win:`/`fn:` that
holds it), takes a category that the code at none of its PCs supports, or claims basis
*measured* without an `alp:` record at one of its PCs. A submission that does not match
the schema is rejected whole. Nothing is repaired. Categories: {", ".join(CATEGORIES)}."""

INSTRUCTIONS = (
    "pcscope serves one indexed AArch64 workload profile. Every tool answer is bounded "
    "and names evidence by stable IDs; you may cite only IDs the tools returned to you.\n\n"
    f"{WORKFLOW}\n\n{IDS}\n\n{REJECTIONS}")
