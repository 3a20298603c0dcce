"""Import hygiene: a command loads only the libraries it uses (start-up is mostly imports).

Each check runs in a fresh interpreter and reads ``sys.modules`` afterwards: a reopen plus
one lookup needs numpy, not the parser (polars), the models (pydantic), the model SDK
(anthropic), the text index (tantivy), any UI, nor the msgpack codec (msgspec: the
mechanisms at a PC are named from arrays, the guides decode on first use), the guide
readers or the pattern pass (the pattern table is a module of its own); the explorer's
first frame needs
Textual, not the analysis engine's libraries, the text index, the Markdown renderer, the ALP
module, the guide reader or the msgpack codec (all loaded after the first frame).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_mechanism_store import walks
from test_store import PROFILE

import pcscope
from pcscope.index.store import open_workload

REPO = Path(pcscope.__path__[0]).parent
ENGINE = ("polars", "pydantic", "anthropic", "tantivy", "httpx", "mcp")
UI = ("textual", "rich", "markdown_it", "pygments")
# What a reopen for one PC leaves out besides: the msgpack codec, the guide readers, the
# pattern pass's instruction tables and regular expressions, temporary folders.
LOOKUP = ("msgspec", "pcscope.core.readers.guides", "pcscope.core.patterns", "pcscope.core.isa",
          "tempfile")
# What the explorer loads after its first frame: the ALP module (with the ALP), the guide
# reader and the msgpack codec (with the guide pane).
LATER = ("msgspec", "pcscope.core.alp", "pcscope.core.readers.guides")


@pytest.fixture()
def indexed(tmp_path) -> tuple[Path, Path]:
    """A profile and an index folder holding its current index with its mechanisms (as
    `pcscope index` leaves it)."""
    profile, index_dir = tmp_path / "p.csv", tmp_path / "idx"
    profile.write_text(PROFILE)
    open_workload(profile, index_dir=index_dir).mechanisms  # noqa: B018
    return profile, index_dir


def loaded_after(code: str, tmp_path: Path,
                 watched: tuple[str, ...] = ENGINE + UI) -> tuple[list[str], list[str]]:
    """Run ``code`` in a fresh interpreter: (its output lines, every module of ``watched``
    it loaded)."""
    script = (f"{code}\nimport json, sys\n"
              f"print(json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=REPO, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                          check=True)
    *lines, last = done.stdout.strip().splitlines()
    return lines, json.loads(last)


def test_show_on_an_indexed_profile_loads_no_engine_or_ui_library(indexed, tmp_path):
    profile, index_dir = indexed
    lines, loaded = loaded_after(
        "from pcscope.cli.main import main\n"
        f"assert main(['show', {str(profile)!r}, '0x1004', '--index-dir', "
        f"{str(index_dir)!r}]) == 0", tmp_path, ENGINE + UI + LOOKUP)
    assert any(line.startswith(">") and "0x1004" in line for line in lines)  # it did show
    assert loaded == []


def test_show_of_a_mechanism_loads_the_codec_it_needs(tmp_path):
    """The LOOKUP check can fail: a mechanism ID needs the decoded table."""
    profile, index_dir = walks(tmp_path), tmp_path / "idx"
    mechanism = next(iter(open_workload(profile, index_dir=index_dir).mechanisms))
    lines, loaded = loaded_after(
        "from pcscope.cli.main import main\n"
        f"assert main(['show', {str(profile)!r}, {mechanism.id!r}, '--index-dir', "
        f"{str(index_dir)!r}]) == 0", tmp_path, LOOKUP)
    assert lines[0].startswith(mechanism.id)
    assert loaded == ["msgspec"]


def test_show_error_path_loads_no_engine_or_ui_library(tmp_path):
    lines, loaded = loaded_after(
        "from pcscope.cli.main import main\n"
        f"assert main(['show', {str(tmp_path / 'none.csv')!r}, '0x1004']) == 2", tmp_path)
    assert loaded == []


def test_explorer_first_frame_loads_only_textual(indexed, tmp_path):
    """What `pcscope open` runs before its first frame: parse, reopen the current index,
    build the main screen. Textual and rich are expected; nothing else watched."""
    profile, index_dir = indexed
    _, loaded = loaded_after(
        "from pcscope.cli.main import build_parser\n"
        "from pcscope.cli.cmd_open import request_of\n"
        "from pcscope.tui.app import PcscopeApp\n"
        "from pcscope.tui.config import TuiConfig\n"
        "from pcscope.tui.launch import reopen\n"
        "from pcscope.tui.screens.main import MainScreen\n"
        f"args = build_parser('cmd_open').parse_args(['open', {str(profile)!r}, "
        f"'--index-dir', {str(index_dir)!r}])\n"
        "request = request_of(args)\n"
        "prepared = reopen(request)\n"
        "assert prepared is not None, 'the index was not current'\n"
        "MainScreen(prepared, request, TuiConfig(path=None))\n", tmp_path, ENGINE + UI + LATER)
    assert [m for m in loaded if m not in ("textual", "rich")] == []
    assert "textual" in loaded  # the check sees what was imported


def test_building_without_alp_or_mca_loads_neither_reader(tmp_path):
    profile = tmp_path / "p.csv"
    profile.write_text(PROFILE)
    readers = ("pcscope.core.readers.alp", "pcscope.index.alp_store",
               "pcscope.core.importers.mca")
    lines, _ = loaded_after(
        "import sys\n"
        "from pcscope.index.store import open_workload\n"
        f"open_workload({str(profile)!r}, index_dir={str(tmp_path / 'idx')!r})\n"
        "assert 'pcscope.core.patterns' in sys.modules  # it did build\n"
        f"print([m for m in {readers!r} if m in sys.modules])", tmp_path)
    assert lines == ["[]"]
