"""Reading text files line by line and in blocks: the same lines, numbers and errors."""

from __future__ import annotations

import gzip

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcscope.core import textio
from pcscope.core.errors import InputError
from pcscope.core.textio import open_line_blocks, open_text_lines

LINE = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
               max_size=12)


def batched(path, size: int) -> list[tuple[int, str]]:
    """The lines of open_line_blocks as open_text_lines gives them (UTF-8, no line end)."""
    out = []
    for block in open_line_blocks(path, size):
        assert 0 < len(block) <= size
        starts = [0, *(block.ends[:-1] + 1).tolist()]
        assert block.data.endswith(b"\n") and block.ends[-1] == len(block.data) - 1
        lines = [block.data[a:b].rstrip(b"\r").decode()
                 for a, b in zip(starts, block.ends.tolist(), strict=True)]
        out += list(enumerate(lines, block.first))
    return out


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(LINE, max_size=30), ends=st.sampled_from(["\n", "\r\n"]),
       final=st.booleans(), size=st.integers(1, 7), chunk=st.integers(1, 9))
def test_batches_hold_the_lines_of_open_text_lines(tmp_path_factory, lines, ends, final, size,
                                                   chunk):
    path = tmp_path_factory.mktemp("t") / "f.jsonl.gz"
    text = ends.join(lines) + (ends if final and lines else "")
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(textio, "_CHUNK", chunk)  # lines and characters cut across chunks
        assert batched(path, size) == list(open_text_lines(path))


def test_a_truncated_gzip_names_its_line(tmp_path, monkeypatch):
    monkeypatch.setattr(textio, "_CHUNK", 5)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(b"".join(b"line %d\n" % i for i in range(2000)))[:-30])
    with pytest.raises(InputError) as err:
        batched(cut, 100)
    assert "truncated or corrupt gzip" in str(err.value) and err.value.line > 1

