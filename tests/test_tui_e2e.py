"""End to end: the real `pcscope open` in a real terminal (tmux), driven by keys, checked
by what `tmux capture-pane` shows — what a user over SSH would see."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed: no real terminal to drive")

WAIT = 30.0


class Tmux:
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, *args: str) -> str:
        done = subprocess.run(["tmux", *args], capture_output=True, text=True, check=False)
        return done.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str) -> None:
        """Key names (``Enter``, ``BSpace``, ``j``) one by one."""
        for key in keys:
            self.run("send-keys", "-t", self.name, key)
            time.sleep(0.05)

    def type(self, text: str) -> None:
        """Literal text (``0x100c`` would otherwise be read as a key code)."""
        self.run("send-keys", "-t", self.name, "-l", text)

    def wait_for(self, text: str) -> str:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared; the terminal shows:\n{self.screen()}")

    def alive(self) -> bool:
        return subprocess.run(["tmux", "has-session", "-t", self.name],
                              capture_output=True, check=False).returncode == 0


@pytest.fixture
def tmux(tmp_path):
    session = Tmux(f"pcscope-test-{uuid.uuid4().hex[:8]}")
    yield session
    session.run("kill-session", "-t", session.name)


def test_explore_a_profile_in_a_real_terminal(tmux, tmp_path, indexed) -> None:
    inputs = indexed.inputs
    command = [
        sys.executable, "-m", "pcscope", "open", str(inputs.profile), "--alp", str(inputs.alp),
        "--guide", str(inputs.guide), "--index-dir", str(indexed.index_dir),
        "--session", str(indexed.session),
    ]
    env = {"TERM": "xterm-256color", "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "PYTHONPATH": os.pathsep.join(sys.path)}
    env_args = [f"{k}={v}" for k, v in env.items()]
    tmux.run("new-session", "-d", "-s", tmux.name, "-x", "80", "-y", "24",
             "env", *env_args, *command)
    screen = tmux.wait_for("Hot windows")
    assert "main_loop" in screen and "40.08%" in screen  # 19000 of 47400 samples
    assert " 1 Hot " in screen
    tmux.keys("j", "Enter")  # the second hottest window
    tmux.wait_for("runtime_dispatch · win:0x2000")
    screen = tmux.wait_for("mp 25.0%")  # the ALP badges arrive once the ALP is loaded
    assert "BLR X3" in screen
    tmux.keys("3")  # its ALP
    screen = tmux.wait_for("alp:0x2004")
    assert "mispredicted 1k (25.0%)" in screen
    tmux.keys(":")
    tmux.wait_for("go to PC")
    tmux.type("0x100c")
    tmux.keys("Enter")  # to the BL …
    tmux.wait_for("main_loop · win:0x1000")
    tmux.keys("Enter")  # … and follow it
    tmux.wait_for("runtime_dispatch · win:0x2000")
    tmux.keys("BSpace")
    tmux.wait_for("main_loop · win:0x1000")
    tmux.keys("q")
    deadline = time.monotonic() + WAIT
    while tmux.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not tmux.alive(), "q did not quit the explorer"


def test_search_goto_guides_triage_and_copy_in_a_real_terminal(tmux, tmp_path, indexed) -> None:
    """The keys an engineer types over SSH: a search refined while it runs (F3), : with a
    symbol, a guide search, an accepted idea exported with its verdict, a copied PC."""
    inputs = indexed.inputs
    report = tmp_path / "triaged.md"
    command = [
        sys.executable, "-m", "pcscope", "open", str(inputs.profile), "--alp", str(inputs.alp),
        "--guide", str(inputs.guide), "--index-dir", str(indexed.index_dir),
        "--session", str(indexed.session),
    ]
    env = {"TERM": "xterm-256color", "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "PYTHONPATH": os.pathsep.join(sys.path)}
    tmux.run("new-session", "-d", "-s", tmux.name, "-x", "120", "-y", "40",
             "env", *[f"{k}={v}" for k, v in env.items()], *command)
    tmux.wait_for("Hot windows")
    tmux.keys("/")
    # Textual hands a key to the focused widget's own queue: letters sent in the same burst
    # as `/` would reach the hot-window list before the query box takes the focus.
    tmux.wait_for("(F3: regex)")
    time.sleep(0.3)
    tmux.type("ldr")
    tmux.keys("Enter")  # Enter takes the focus to the hits …
    tmux.wait_for("hits · query")
    tmux.keys("/", "F3")  # … / back to the query; F3 re-runs it as a regex in the background
    tmux.wait_for("hits · regex")
    tmux.type("et")  # typed on: still the query, not export (e) or anything else
    time.sleep(0.5)
    screen = tmux.screen()
    assert "export" not in screen and "2 hits · regex" in screen
    for key in ("Escape", "1"):  # apart: Escape then 1 at once would read as alt+1
        tmux.keys(key)
        time.sleep(0.4)
    tmux.keys(":")
    tmux.wait_for("go to PC")
    tmux.type("runtime_dispatch+0x4")
    tmux.keys("Enter")
    screen = tmux.wait_for("runtime_dispatch · win:0x2000")
    assert "samples  share heat asm" in screen
    tmux.keys("Y")
    tmux.wait_for("copied: pc:0x2004 BLR X3")
    tmux.keys("7", "/")
    tmux.wait_for("search guides")
    tmux.type("contention")
    tmux.keys("Enter")
    tmux.wait_for("2 sections match 'contention'")
    tmux.keys("Enter")
    tmux.wait_for("LDAXR/STLXR retry loops suffer under contention")
    tmux.keys("A")
    tmux.wait_for("complete ·")
    tmux.keys("4", "y", "e")
    tmux.wait_for("export run")
    tmux.keys("C-u")
    tmux.type(str(report))
    tmux.keys("Enter")
    tmux.wait_for("written to")
    text = report.read_text(encoding="utf-8")
    assert "## Engineer's triage" in text and "| accepted |" in text
    tmux.keys("q")
