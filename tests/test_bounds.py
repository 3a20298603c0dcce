"""Bounds that keep bad values out of what pcscope writes and model tools out of runaway
work: no NaN/Infinity in JSON, a regex that stops at its deadline instead of running on in
its thread, a model's oversized tool name and arguments cut before they are echoed or
logged."""

from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace

import pytest
from engine_helpers import mini_workload

from pcscope.cli.common import print_json
from pcscope.core.engine import tools
from pcscope.core.engine.tools import SharedMemory, ToolBox
from pcscope.core.evidence import EvidenceStore
from pcscope.core.finite_json import dumps
from pcscope.index import query
from pcscope.index.query import QueryEngine


def test_json_never_holds_nan_or_infinity(capsys):
    data = {"rate": float("nan"), "rows": [1.5, float("inf"), {"x": -float("inf")}],
            "pair": (float("nan"), 2)}
    text = dumps(data)
    assert json.loads(text, parse_constant=lambda word: pytest.fail(word)) == {
        "rate": None, "rows": [1.5, None, {"x": None}], "pair": [None, 2]}
    print_json(data)
    assert "NaN" not in capsys.readouterr().out
    assert dumps({"a": 1.0}) == '{"a": 1.0}'


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    return mini_workload(tmp_path_factory.mktemp("bounds"))


def test_a_regex_past_its_deadline_stops_between_slices(workload, monkeypatch):
    engine = QueryEngine.of(workload)
    assert engine.regex("ldr", deadline=time.monotonic() + 60).total > 0
    monkeypatch.setattr(query, "REGEX_SLICE", 1)          # one row per slice
    calls = []
    real = query._contains
    now = [0.0]  # the query's clock: it moves only when the second slice runs

    def counting(series, pattern, ascii_text=False):
        calls.append(len(series))
        if len(calls) == 2:
            now[0] = 2.0                                   # the deadline passes here
        return real(series, pattern, ascii_text)

    monkeypatch.setattr(query, "_contains", counting)
    monkeypatch.setattr(query, "time", SimpleNamespace(monotonic=lambda: now[0]))
    with pytest.raises(TimeoutError):
        engine.regex("ldr", deadline=1.0)
    assert len(calls) == 2 < len(workload.profile)         # not one slice more


def test_a_tool_regex_past_its_limit_is_an_answer_not_a_thread_left_running(workload,
                                                                              monkeypatch):
    monkeypatch.setattr(tools, "QUERY_SECONDS", 0.2)
    monkeypatch.setattr(query, "REGEX_SLICE", 1)
    started = []
    real = query._contains

    def slow(series, pattern, ascii_text=False):
        started.append(time.monotonic())
        time.sleep(0.05)                # every row a slice: the whole scan takes ~0.6 s
        return real(series, pattern, ascii_text)

    monkeypatch.setattr(query, "_contains", slow)
    store = EvidenceStore(workload)
    box = ToolBox(store, SharedMemory(store), "w1.c1", ())

    async def go():
        answer = await box.use("regex", {"pattern": "ldr"})
        return answer, time.monotonic()

    result, answered = asyncio.run(go())   # (asyncio.run waits for leftover threads)
    assert result.error and "longer than" in result.error
    assert all(t < answered for t in started)       # no slice began after the answer


def test_oversized_tool_names_and_arguments_are_cut_before_logging(workload):
    store = EvidenceStore(workload)
    box = ToolBox(store, SharedMemory(store), "w1.c1", ())
    huge = "x" * 1_000_000

    async def go():
        return [await box.use(huge, {"a": 1}),
                await box.use("search", {"query": huge, "deep": [[[[[[huge]]]]]]}),
                await box.use("alp", {"pc": [huge]})]

    unknown, search, alp = asyncio.run(go())
    assert all(r.error for r in (unknown, search, alp))
    assert len(unknown.text) < 1000
    logged = json.dumps([use.tool for use in box.log] + [use.input for use in box.log])
    assert len(logged) < 5 * tools.MAX_LOGGED + 2000
    assert box.log[0].tool.endswith("…") and len(box.log[0].tool) == tools.MAX_LOGGED + 1
