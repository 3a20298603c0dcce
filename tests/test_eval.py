"""Blind evaluation: masking, order swapping, averaging, agreement-only preferences."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from anthropic_helpers import backend
from mock_messages_server import MockMessagesServer, Reply, tool

from pcscope.core import eval as ev
from pcscope.core.errors import EvidenceError, UsageError

IDEA_A = {"id": "idea:indirect-branch:0x2004", "title": "Alpha: devirtualize the hot blr",
          "category": "indirect-branch", "target": "software", "claim": "blr mispredicts",
          "numbers": "measured: the ALP record of 0x2004", "recommendation": "guarded direct call", "checks": ["one target"], "pcs": ["0x2004"],
          "evidence": ["pc:0x2004", "alp:0x2004"], "weight": 0.05, "pc_weight": 0.01,
          "confidence": 0.7, "basis": "measured", "merged_from": ["finding:r1.w1.c1.f1"]}
IDEA_B = {**IDEA_A, "id": "idea:division:0x3000", "title": "Beta: hoist the udiv",
          "category": "division", "pcs": ["0x3000"], "evidence": ["pc:0x3000"],
          "merged_from": ["finding:r7.w2.c4.f2"]}


class Store:
    """The evidence store's resolve(), for the IDs the ideas cite."""

    def resolve(self, evidence_id: str):
        if evidence_id == "alp:0x2004":
            raise EvidenceError("gone")
        return SimpleNamespace(text=f"rendering of   {evidence_id}")


def side(ideas, label="bounded:scripted:ok") -> ev.SideRun:
    return ev.SideRun(ev.Side.parse(label), ideas, ev.SideCost(calls=3, input_tokens=100))


def scores(*values: int) -> ev.Scores:
    return ev.Scores(**dict(zip(ev.CRITERIA, values, strict=True)))


BASE = {"Alpha": (4, 3, 5, 4, 3, 4), "Beta": (2, 2, 3, 3, 2, 1)}  # A = 23, B = 13


def which(ideas: list[dict]) -> str:
    return "Alpha" if ideas[0]["title"].startswith("Alpha") else "Beta"


def biased_judge(prefer: str):
    """Scores each set by what it is, +1 usefulness (max 5) for whichever is shown first;
    prefers ``prefer`` ("Alpha", "Beta", or "first")."""
    seen = []

    async def judge(prompt: ev.JudgePrompt) -> ev.Judgment:
        seen.append(prompt)
        first, second = which(prompt.set_1), which(prompt.set_2)
        s1 = list(BASE[first])
        s1[0] = min(5, s1[0] + 1)
        wanted = first if prefer == "first" else prefer
        return ev.Judgment(rationale="by criterion", set_1=scores(*s1),
                           set_2=scores(*BASE[second]),
                           preferred="set_1" if wanted == first else "set_2")

    judge.seen = seen
    return judge


async def test_scores_average_over_trials_and_both_orders():
    judge = biased_judge("Alpha")
    result = await ev.evaluate(side([IDEA_A]), side([IDEA_B]), judge, "judge", 3, Store(), "{}")
    table = result.table()
    # A shown first in half the judgments: usefulness (5 + 4) / 2; B: (3 + 2) / 2
    assert table.scores["A"]["usefulness"] == pytest.approx(4.5)
    assert table.scores["B"]["usefulness"] == pytest.approx(2.5)
    assert table.scores["A"]["total"] == pytest.approx(23.5)
    assert table.scores["B"]["total"] == pytest.approx(13.5)
    assert table.wins == {"A": 3, "B": 0, "tie": 0} and table.agreement == 1.0
    assert [(p.trial, p.order) for p in judge.seen] == [
        (1, "AB"), (1, "BA"), (2, "AB"), (2, "BA"), (3, "AB"), (3, "BA")]


async def test_position_bias_alone_gives_ties():
    result = await ev.evaluate(side([IDEA_A]), side([IDEA_B]), biased_judge("first"), "j", 2,
                               Store(), "{}")
    table = result.table()
    assert table.wins == {"A": 0, "B": 0, "tie": 2} and table.agreement == 0.0
    assert [v.preferred for v in result.verdicts] == ["A", "B", "A", "B"]


async def test_sets_are_masked_and_swapped_with_the_same_evidence():
    judge = biased_judge("Alpha")
    await ev.evaluate(side([IDEA_A]), side([IDEA_B]), judge, "j", 1, Store(), "{}")
    ab, ba = judge.seen
    assert ab.set_1 == ba.set_2 and ab.set_2 == ba.set_1
    assert which(ab.set_1) == "Alpha" and which(ba.set_1) == "Beta"
    for idea in ab.set_1 + ab.set_2:
        assert set(idea) == set(ev.MASKED_KEYS)  # no id, merged_from, pc_weight
    assert "finding:" not in json.dumps([ab.set_1, ab.set_2])
    assert ab.evidence == ba.evidence == (
        "alp:0x2004: (does not resolve)\npc:0x2004: rendering of pc:0x2004\n"
        "pc:0x3000: rendering of pc:0x3000")


async def test_failed_judgments_are_counted_and_left_out():
    good = biased_judge("Alpha")

    async def flaky(prompt):
        return None if prompt.order == "BA" else await good(prompt)

    result = await ev.evaluate(side([IDEA_A]), side([IDEA_B]), flaky, "j", 2, Store(), "{}")
    table = result.table()
    assert table.judgments == 2 and table.failed == 2
    assert table.wins == {"A": 0, "B": 0, "tie": 2}  # one order only: no agreement
    assert table.scores["A"]["usefulness"] == 5.0


async def test_json_and_table_output():
    result = await ev.evaluate(side([IDEA_A]), side([IDEA_B], "full-prompt:scripted:ok"),
                               biased_judge("Alpha"), "anthropic:judge", 1, Store(), "{}")
    data = ev.to_json(result, "profile.csv")
    assert data["scores"]["A"]["total"] == 23.5 and data["preferences"]["A"] == 1
    assert data["b"]["side"] == "full-prompt:scripted:ok"
    assert data["cost"]["A"] == {"calls": 3, "input_tokens": 100, "cache_write_tokens": 0,
                                 "cache_read_tokens": 0, "output_tokens": 0, "seconds": 0.0,
                                 "usd": None}
    table = ev.text_table(data).splitlines()
    # the article's table: workload, A, B, difference (B - A)
    assert table[3].split() == ["workload", "A:", "bounded", "(ALP)", "B:", "full-prompt",
                                "(ALP)", "difference"]
    assert table[4].split() == ["profile.csv", "23.5", "13.5", "-10.0"]
    assert "preferred (both orders agree): A 1, B 0, tie 0 (order agreement 100%)" in table
    assert table[-4].split() == ["cost", "calls", "input", "cache", "write", "cache", "read",
                                 "output", "seconds", "usd", "(est.)"]


async def test_sets_are_capped_to_the_same_top_n_and_cited_guides_are_shown():
    judge = biased_judge("Alpha")
    guided = {**IDEA_A, "evidence": ["pc:0x2004", "guide:uarch/branches"]}
    section = SimpleNamespace(id="guide:uarch/branches", heading="Branches",
                              text="**What to try.** Devirtualize.")
    await ev.evaluate(side([guided, IDEA_A, IDEA_A]), side([IDEA_B]), judge, "j", 1, Store(),
                      "{}", top=2, guides=[section])
    ab, _ba = judge.seen
    assert len(ab.set_1) == 2 and len(ab.set_2) == 1
    assert ab.guides == 'guide:uarch/branches "Branches": **What to try.** Devirtualize.'


def test_side_must_name_a_strategy_and_a_model():
    assert ev.Side.parse("full-prompt:anthropic:claude-x") == ev.Side("full-prompt",
                                                                      "anthropic:claude-x")
    for bad in ("anthropic:claude-x", "bounded", "bounded:"):
        with pytest.raises(UsageError):
            ev.Side.parse(bad)


async def test_model_judge_through_the_messages_api():
    def judge_model(body: dict) -> Reply:
        text = json.dumps(body["messages"][0])
        first = "Alpha" if text.index("Alpha") < text.index("Beta") else "Beta"
        verdict = {"rationale": "r", "set_1": dict(zip(ev.CRITERIA, BASE[first], strict=True)),
                   "set_2": dict(zip(ev.CRITERIA, BASE["Beta" if first == "Alpha" else "Alpha"],
                                     strict=True)),
                   "preferred": "set_1" if first == "Alpha" else "set_2"}
        return Reply([tool("submit_scores", verdict)])

    with MockMessagesServer(judge_model, min_cache_tokens=1) as server:
        async with backend(server) as model:
            result = await ev.evaluate(side([IDEA_A]), side([IDEA_B]), ev.model_judge(model),
                                       model.name, 2, Store(), "{}")
        seen = server.messages_seen()
        bodies = [s.body for s in seen]
    table = result.table()
    assert table.scores["A"]["total"] == 23 and table.scores["B"]["total"] == 13
    assert table.wins["A"] == 2
    assert [t["name"] for t in bodies[0]["tools"]] == ["submit_scores"]
    assert len(bodies) == 4 and len({json.dumps(b) for b in bodies}) == 4  # trials differ
    # profile + cited evidence (shared by every judgment) is cached once and read after
    assert ["cache_control" in b for b in bodies[0]["messages"][0]["content"]] == [
        False, True, False, False, False]
    assert seen[0].usage["cache_read_input_tokens"] == 0
    reads = [s.usage["cache_read_input_tokens"] for s in seen[1:]]
    assert len(set(reads)) == 1 and reads[0] > 0


def test_eval_command_runs_both_strategies_and_replays_identically(tmp_path, monkeypatch,
                                                                   capsys):
    from anthropic_helpers import FAKE_KEY, workload
    from scripted_analyst import analyst

    from pcscope.cli.main import main

    workload(tmp_path / "w", alp=False)
    profile = str(tmp_path / "w" / "client_trace.csv")
    common = [profile, "--index-dir", str(tmp_path / "w" / "idx"), "--trials", "1",
              "--session", str(tmp_path / "s.sqlite"), "--depth", "1"]
    with MockMessagesServer(analyst) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        assert main(["eval", *common, "--a", "full-prompt:anthropic:claude-test",
                     "--b", "bounded:anthropic:claude-test", "--judge", "anthropic:claude-j",
                     "--record", str(tmp_path / "rec"), "--json", str(tmp_path / "live.json")]
                    ) == 0
    table = capsys.readouterr().out
    assert "A = full-prompt:anthropic:claude-test [alp]" in table and "difference" in table
    live = json.loads((tmp_path / "live.json").read_text())
    assert live["cost"]["A"]["calls"] == 1 and live["cost"]["B"]["calls"] >= 1
    assert live["cost"]["judge"]["calls"] == 2 and len(live["judgments"]) == 2

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    rec = tmp_path / "rec"
    assert main(["eval", *common, "--offline", "--a", f"full-prompt:replay:{rec / 'a.jsonl'}",
                 "--b", f"bounded:replay:{rec / 'b.jsonl'}",
                 "--judge", f"replay:{rec / 'judge.jsonl'}", "--json", "-"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    for key in ("scores", "preferences", "judgments"):
        assert replayed[key] == live[key]
    for side in ("A", "B", "judge"):
        for field in ("calls", "input_tokens", "output_tokens", "cache_read_tokens",
                      "cache_write_tokens"):
            assert replayed["cost"][side][field] == live["cost"][side][field]


def test_eval_refuses_a_network_judge_offline(tmp_path, capsys):
    from pcscope.cli.main import main

    code = main(["eval", str(tmp_path / "p.csv"), "--a", "bounded:offline",
                 "--b", "full-prompt:offline", "--judge", "offline"])
    assert code == 2 and "the judge must be a model" in capsys.readouterr().err


@pytest.mark.parametrize("a, a_evidence, table", [
    ("full-prompt", "alp", "bounded vs full prompt"),
    ("bounded", "no-alp", "Table 2: bounded with ALP vs without"),
    ("full-prompt", "selected", "Table 3: full prompt fed the bounded run's ALP"),
])
def test_eval_runs_the_article_comparisons_with_the_bundled_guides(a, a_evidence, table,
                                                                    tmp_path, monkeypatch,
                                                                    capsys):
    from anthropic_helpers import FAKE_KEY, workload
    from scripted_analyst import analyst

    from pcscope.cli.main import main

    workload(tmp_path / "w")
    folder = tmp_path / "w"
    with MockMessagesServer(analyst) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        code = main(["eval", str(folder / "client_trace.csv"), "--alp", str(folder / "alp.jsonl"),
                     "--index-dir", str(folder / "idx"), "--session", str(tmp_path / "s.sqlite"),
                     "--trials", "1", "--depth", "1", "--a", f"{a}:anthropic:claude-a",
                     "--a-evidence", a_evidence, "--b", "bounded:anthropic:claude-b",
                     "--judge", "anthropic:claude-j", "--json", str(tmp_path / "e.json")])
        seen = server.messages_seen()
    assert code == 0, table
    data = json.loads((tmp_path / "e.json").read_text())
    assert data["a"]["evidence"] == a_evidence and data["b"]["evidence"] == "alp"
    assert data["cost"]["judge"]["calls"] == 2 and len(data["judgments"]) == 2
    first = {side: [json.dumps(s.body["messages"][0]) for s in seen
                    if s.body["model"] == f"claude-{side}"] for side in "ab"}
    assert first["a"] and first["b"]
    for side in "ab":  # the bundled guides reached both sides
        assert any("guide:uarch/" in m or "guide:swopt/" in m for m in first[side]), side
    has_alp = {side: any("| n 120000" in m for m in first[side]) for side in "ab"}
    assert has_alp == {"a": a_evidence != "no-alp", "b": True}
    judge = [s.body for s in seen if s.body["model"] == "claude-j"]
    assert "How to work" in judge[0]["system"][0]["text"]
    assert "through the tools" not in judge[0]["system"][0]["text"]  # no analyst protocol
    out = capsys.readouterr().out
    assert "difference" in out and "cache write" in out
