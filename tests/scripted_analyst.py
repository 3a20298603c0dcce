"""A scripted "model" for the local Messages API server: plausible, valid, deterministic.

As an analyst (``submit_findings`` offered) it reads the first hot PC of its evidence
through ``asm_around`` when it has tools, then submits up to two findings about the
hottest PCs it was given (``indirect-branch`` for a br/blr, else ``other``; ``measured``
when the PC's line carries its ALP figures), with one open question on first-wave calls.
As a judge (``submit_scores``) it scores each set by how many ideas cite ALP evidence; as
a reviewer (``submit_review``) it proposes nothing. Run it as a server for manual runs:

    python tests/scripted_analyst.py --port 8765   # then ANTHROPIC_BASE_URL=http://127.0.0.1:8765
"""

from __future__ import annotations

import argparse
import json
import re
import time

from mock_messages_server import MockMessagesServer, Reply, text, tool

_PC_LINE = re.compile(r"^>?(pc:0x[0-9a-f]+)\s+(\S+)(.*)$", re.MULTILINE)


def _first_text(body: dict) -> str:
    content = body["messages"][0]["content"]
    return " ".join(b.get("text", "") for b in content) if isinstance(content, list) else content


def analyst(body: dict) -> Reply:
    names = {t["name"] for t in body.get("tools") or []}
    if "submit_scores" in names:
        return _judge(body)
    if "submit_review" in names:
        return Reply([tool("submit_review", {"summary": "no changes"})])
    brief = _first_text(body)
    lines = _PC_LINE.findall(brief)
    if len(body["messages"]) == 1 and "asm_around" in names and lines:
        pc = lines[0][0].removeprefix("pc:")
        return Reply([text(f"Reading around {pc}."), tool("asm_around", {"pc": pc})])
    first_wave = "open question from" not in brief
    findings = []
    for evidence_id, mnemonic, rest in lines[:2]:
        pc = evidence_id.removeprefix("pc:")
        alp = f"alp:{pc}"
        measured = "  |" in rest  # the line carries the PC's ALP record
        indirect = mnemonic.lower() in ("br", "blr")
        findings.append({
            "title": f"Hot {'indirect branch' if indirect else 'instruction'} at {pc}",
            "category": "indirect-branch" if indirect else "other",
            "target": "software",
            "claim": f"{mnemonic} at {pc} holds a large share of the window's samples.",
            "recommendation": "Measure its stalls and restructure the hot path around it.",
            "pcs": [pc], "evidence": [evidence_id] + ([alp] if measured else []),
            "confidence": 0.5 if measured else 0.3,
            "basis": "measured" if measured else "profile-only",
            "questions": [f"What feeds the operands of {pc}?"]
            if first_wave and not findings else []})
    return Reply([tool("submit_findings", {"findings": findings, "summary": "scripted"})])


def _judge(body: dict) -> Reply:
    content = body["messages"][0]["content"]
    sets = [b["text"] for b in content if 'kind="set-' in b.get("text", "")]
    grounded = [min(5, 1 + s.count("alp:")) for s in sets]
    scores = [{c: g for c in ("usefulness", "novelty", "grounding", "expected_upside",
                              "guide_fit", "follow_up_clarity")} for g in grounded]
    preferred = "tie" if grounded[0] == grounded[1] else (
        "set_1" if grounded[0] > grounded[1] else "set_2")
    return Reply([tool("submit_scores", {"set_1": scores[0], "set_2": scores[1],
                                         "preferred": preferred, "rationale": "ALP citations"})])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--min-cache-tokens", type=int, default=1024)
    args = parser.parse_args()
    with MockMessagesServer(analyst, min_cache_tokens=args.min_cache_tokens,
                            port=args.port) as server:
        print(f"serving the Messages API at {server.base_url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        usage = [s.usage for s in server.messages_seen()]
        print(json.dumps({"requests": len(usage)}))


if __name__ == "__main__":
    main()
