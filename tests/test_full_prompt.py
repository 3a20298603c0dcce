"""The legacy full prompt fits the model's context on the bundled sample and on a
1M-row profile, every part of the request counted."""

from __future__ import annotations

import asyncio

from anthropic_helpers import backend
from mock_messages_server import MockMessagesServer

from pcscope.core.engine import full_prompt as fp
from pcscope.core.engine.system_prompt import FULL_SYSTEM
from pcscope.index.store import open_workload
from pcscope.samples import bundled


def test_the_bundled_sample_is_trimmed_below_the_context_by_count_tokens(tmp_path):
    sample = bundled("C")
    workload = open_workload(sample.profile, alp=sample.alp, guides=[str(g) for g in
                                                                     sample.guides],
                             index_dir=tmp_path / "idx")
    selection = workload.hot(coverage=0.9)

    async def go():
        with MockMessagesServer() as server:
            async with backend(server, max_tokens=16000) as model:
                context, max_tokens = fp.context_of(model)
                prompt = await fp.fit(workload, selection, context - max_tokens,
                                      model.measure)
                counted = server.counted[-1]
        return prompt, counted, context - max_tokens

    prompt, counted, room = asyncio.run(go())
    assert room == 200_000 - 16000
    assert prompt.windows_dropped > 0 and prompt.windows > 0  # it had to trim
    assert prompt.measured <= room < prompt.measured * 1.2  # and kept what fits
    # everything the call sends was counted: system text, answer schema, evidence
    assert counted["system"][0]["text"].startswith(FULL_SYSTEM[:40])
    assert [t["name"] for t in counted["tools"]] == ["submit_findings"]
    assert prompt.brief in counted["messages"][0]["content"][0]["text"]


def test_a_million_row_profile_is_trimmed_at_three_characters_per_token(tmp_path):
    rows = 1_000_000
    lines = ["function,module,window,pc,samples,asm"]
    lines += [f"f{i // 4096},app,w{i // 64},0x{0x100000 + 4 * i:x},{1 + (i * 7919) % 997},"
              f"\"ldr x{i % 30}, [x{(i + 1) % 30}, #{8 * (i % 64)}]\"" for i in range(rows)]
    profile = tmp_path / "big.csv"
    profile.write_text("\n".join(lines) + "\n", encoding="utf-8")
    workload = open_workload(profile, index_dir=tmp_path / "idx")
    assert len(workload.profile) == rows
    selection = workload.hot(coverage=0.9)
    measure = fp.measure_of(object())  # no model backend: characters / 3 of every part
    prompt = asyncio.run(fp.fit(workload, selection, 100_000, measure))
    assert prompt.measured == fp.size(FULL_SYSTEM) + fp.size(prompt.brief) <= 100_000
    assert prompt.windows_dropped > 10_000 and prompt.windows > 10
