"""Explorer benchmarks (issue 5) on an already-indexed big profile.

- first frame: `pcscope open` in a pseudo-terminal (160×48), from process start until the
  hottest window's row is on the terminal; best and median of a few runs.  Target ≤ 0.8 s.
- latencies, in one child process running the explorer headless at 160×48, for a cursor
  move, a jump to a PC (`:` prompt, Enter) and opening a window (Enter on a hot window):
  key press to the first frame painted (``*_ms``: it shows the result) and to the last
  frame the key causes (``*_settled_ms``: the screen then stays still for 100 ms; the
  pane that lost the focus dims its cursor a frame later); p50 / p99 / max.
  Target ≤ 50 ms.
- search: Enter in the search pane to the last frame of the results.  Target ≤ 200 ms.
- event-loop lag during an analysis of 60 scripted calls (concurrency 8): a probe task
  sleeps 5 ms in a loop and records how late it wakes.  Target ≤ 100 ms.
- peak RSS of that child (explorer, workload, ALP, text index).  Target ≤ 500 MB.

    python -m bench.tui_bench [PROFILE_DIR] [--work DIR]
        PROFILE_DIR: a folder with profile.csv.gz [alp.jsonl.gz]; without it a 1M-row
        sample is generated. --work keeps the index (and generated sample) between runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pty
import random
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.measure import Run, compile_bytecode

TARGETS = {"first_frame_s": 0.8, "latency_ms": 50.0, "search_ms": 200.0,
           "analysis_lag_ms": 100.0, "planning_lag_ms": 100.0, "peak_rss_mb": 500.0}
SIZE = (160, 48)
CHILD_TIMEOUT = 900  # seconds for the whole interaction child
RUN_TIMEOUT = 300  # seconds the 60-call analysis may take
BENCH_PRESET = """\
description = "tui bench: 60 scripted calls"
top = 60
depth = 1
concurrency = 8
windows_per_slice = 1
max_calls = 60
max_tokens = 100000000
max_seconds = 600
max_questions = 0
"""


# -- inputs ------------------------------------------------------------------------------
def inputs_in(folder: Path) -> tuple[Path, Path | None]:
    profile = folder / "profile.csv.gz"
    alp = folder / "alp.jsonl.gz"
    return profile, alp if alp.exists() else None


def generate_big(folder: Path) -> None:
    from pcscope.samples.generate import Options, generate

    generate(Options(kind="A", seed=1, out=folder, scale=1_000_000))


def bench_inputs(profile: Path, alp: Path | None):
    """What `pcscope open PROFILE [--alp ALP]` opens: with the standard preset's guides.
    Every measured process opens these, so none of them builds an index of its own."""
    from pcscope.cli.common import default_guides
    from pcscope.core.engine.presets import load_preset
    from pcscope.core.inputs import Inputs

    return Inputs.of(profile, alp=alp, guides=default_guides(load_preset("standard")))


def prepare_index(profile: Path, alp: Path | None, index_dir: Path) -> str:
    """Index (and the text index) before any clock starts; returns the hottest function."""
    from pcscope.index.store import IndexStore

    workload = IndexStore.at(index_dir).open(bench_inputs(profile, alp))
    workload.text  # noqa: B018 - builds the Tantivy index once
    p = workload.profile
    window = p.windows[int(p.windows_by_weight()[0])]
    return p.function_names[window.function]


def prepare_index_apart(profile: Path, alp: Path | None, index_dir: Path) -> str:
    """``prepare_index`` in a process of its own: on Linux a child's peak RSS starts at its
    parent's (fork, then exec, keeps the high-water mark), so the indexing's memory must
    not be in the process that starts the measured ones."""
    code = ("from pathlib import Path; from bench.tui_bench import prepare_index; "
            f"print(prepare_index(Path({str(profile)!r}), "
            f"{f'Path({str(alp)!r})' if alp else None}, Path({str(index_dir)!r})))")
    done = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                          cwd=Path(__file__).resolve().parent.parent, check=True)
    return done.stdout.strip().splitlines()[-1]


# -- first frame -------------------------------------------------------------------------
def first_frame(argv: list[str], marker: str, env: dict[str, str]) -> tuple[float, float]:
    """Seconds from fork to ``marker`` on the terminal, and the process's peak RSS (MB)."""
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: size the terminal, become pcscope
        import fcntl
        import struct
        import termios

        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
        os.execvpe(argv[0], argv, env)
    seen, found = b"", float("nan")
    needle = marker.encode()
    while time.perf_counter() - start < 60:
        ready, _, _ = select.select([fd], [], [], 0.02)
        if not ready:
            continue
        try:
            seen += os.read(fd, 1 << 16)
        except OSError:
            break
        if needle in seen:
            found = time.perf_counter() - start
            break
    os.kill(pid, signal.SIGTERM)
    _, _, usage = os.wait4(pid, 0)
    os.close(fd)
    return found, usage.ru_maxrss / 1024


def bench_first_frame(profile: Path, alp: Path | None, index_dir: Path, marker: str,
                      work: Path, runs: int = 5) -> dict:
    times = [r.seconds for r in first_frame_runs(profile, alp, index_dir, marker, work, runs)]
    return {"first_frame_best_s": min(times), "first_frame_median_s": statistics.median(times)}


def first_frame_runs(profile: Path, alp: Path | None, index_dir: Path, marker: str,
                     work: Path, runs: int) -> list[Run]:
    """``runs`` first frames of ``pcscope open`` (seconds to the marker, peak RSS)."""
    for stale in work.glob("first-frame.sqlite*"):
        stale.unlink()
    argv = [sys.executable, "-m", "pcscope", "open", str(profile), "--index-dir",
            str(index_dir), "--session", str(work / "first-frame.sqlite")]
    if alp:
        argv += ["--alp", str(alp)]
    env = dict(os.environ, TERM="xterm-256color", XDG_CONFIG_HOME=str(work / "config"))
    return [Run(*first_frame(argv, marker, env), 0) for _ in range(runs)]


# -- latencies, search, analysis lag, RSS (one child process) ----------------------------
class Frames:
    """Times of painted frames: wraps the app's display hook (headless still composes)."""

    def __init__(self, app) -> None:
        self.times: list[float] = []
        display = app._display

        def record(screen, renderable) -> None:
            if renderable is not None:
                self.times.append(time.perf_counter())
            display(screen, renderable)

        app._display = record

    def first(self, start: float) -> float:
        later = [t for t in self.times if t > start]
        return later[0] - start if later else float("nan")

    async def settled(self, start: float, quiet: float = 0.1, timeout: float = 5.0) -> float:
        """Seconds from ``start`` to the last frame painted before the screen went still
        for ``quiet`` seconds (NaN when nothing was painted)."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            later = [t for t in self.times if t > start]
            last = later[-1] if later else start
            if time.perf_counter() - last >= quiet and (later or
                                                        time.perf_counter() - start > 1):
                return last - start if later else float("nan")
            await asyncio.sleep(0.002)
        return float("nan")


async def key_latency(pilot, frames: Frames, key: str) -> tuple[float, float]:
    """(first frame, last frame) after the key, in seconds."""
    start = time.perf_counter()
    await pilot.press(key)
    settled = await frames.settled(start)
    return frames.first(start), settled


def summary(values: list, prefix: str) -> dict:
    """p50 / p99 / max in ms; pairs (first, settled) give both sets."""
    if values and isinstance(values[0], tuple):
        return {**summary([v[0] for v in values], prefix),
                **summary([v[1] for v in values], f"{prefix}_settled")}
    ms = sorted(v * 1e3 for v in values)
    return {f"{prefix}_p50_ms": statistics.median(ms),
            f"{prefix}_p99_ms": ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))],
            f"{prefix}_max_ms": ms[-1]}


async def interact(profile: Path, alp: Path | None, index_dir: Path, work: Path) -> dict:
    from pcscope.tui.app import PcscopeApp
    from pcscope.tui.config import TuiConfig
    from pcscope.tui.launch import OpenRequest, reopen
    from pcscope.tui.screens.main import MainScreen

    session = work / "interact.sqlite"
    for stale in work.glob("interact.sqlite*"):  # every run starts from the same state
        stale.unlink()
    request = OpenRequest(bench_inputs(profile, alp), index_dir=index_dir,
                          model="scripted:ok@0.05", preset="tui-bench", session=session)
    # As `pcscope open` does; an index built here would put ingest's peak in this RSS.
    prepared = reopen(request)
    if prepared is None:
        raise RuntimeError(f"{index_dir}: the index prepared for the bench is not current")
    app = PcscopeApp(request, TuiConfig(path=None), prepared)
    out: dict = {}
    async with app.run_test(size=SIZE) as pilot:
        frames = Frames(app)
        while not isinstance(app.screen, MainScreen):
            await pilot.pause(0.01)
        screen = app.screen
        await app.workers.wait_for_complete()  # ALP and badges loaded
        await pilot.press("1")
        await frames.settled(time.perf_counter())
        say("  cursor moves")
        moves = [await key_latency(pilot, frames, key) for key in ["j"] * 40 + ["k"] * 20]
        out.update(summary(moves, "cursor_move"))
        say("  open window")
        opens = []
        for _ in range(20):
            await pilot.press("1", "j")
            await frames.settled(time.perf_counter())
            opens.append(await key_latency(pilot, frames, "enter"))
        out.update(summary(opens, "open_window"))
        say("  jump to pc")
        rng = random.Random(7)
        p = screen.workload.profile
        jumps = []
        for _ in range(20):
            pc = int(p.pc[rng.randrange(len(p))])
            await pilot.press("colon", *f"0x{pc:x}")
            await frames.settled(time.perf_counter())
            jumps.append(await key_latency(pilot, frames, "enter"))
            assert screen.asm.pc == pc
        out.update(summary(jumps, "jump_to_pc"))
        say("  search")
        searches = []
        for query in ("mnemonic:ldaxr", "mnemonic:blr", "mnemonic:udiv", "mnemonic:dmb"):
            await pilot.press("slash")
            screen.search.input.value = query
            await frames.settled(time.perf_counter())
            start = time.perf_counter()
            await pilot.press("enter")
            while screen.search.busy:
                await asyncio.sleep(0.001)
            searches.append(await frames.settled(start))
        out.update(summary(searches, "search"))
        # A query with no hits keeps the focus in the search input (to refine it): leave
        # it, or the next keys would be typed into the query.
        await pilot.press("escape")
        say("  analysis")
        out.update(await analysis_lag(pilot, screen))
    import resource

    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


async def analysis_lag(pilot, screen) -> dict:
    """From A to the first call started, and the worst lateness of a 5 ms sleeper while
    the run plans (before that call) and while its calls run (keys keep being pressed)."""
    worst = {"planning": 0.0, "running": 0.0}
    phase = "planning"
    done = False

    async def probe() -> None:
        while not done:
            start = time.perf_counter()
            await asyncio.sleep(0.005)
            late = time.perf_counter() - start - 0.005
            worst[phase] = max(worst[phase], late)

    task = asyncio.create_task(probe())
    await pilot.press("1")
    started = time.perf_counter()
    await pilot.press("A")
    first_call = None
    deadline = time.monotonic() + RUN_TIMEOUT
    while not (screen.analysis.run.done and not screen.analysis.running):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the analysis did not finish: {screen.analysis.run.counts()}")
        if first_call is None and any(c.status != "queued"
                                      for c in screen.analysis.run.calls.values()):
            first_call = time.perf_counter() - started
            phase = "running"
        await pilot.press("j")
        await asyncio.sleep(0.02)
    done = True
    await task
    return {"analysis_first_call_ms": (first_call or 0.0) * 1e3,
            "planning_lag_ms": worst["planning"] * 1e3,
            "analysis_lag_ms": worst["running"] * 1e3,
            "analysis_calls": len(screen.analysis.run.calls)}


def child(profile: str, alp: str, index_dir: str, work: str) -> None:
    result = asyncio.run(interact(Path(profile), Path(alp) if alp else None, Path(index_dir),
                                  Path(work)))
    print(json.dumps(result))


def bench_interaction(profile: Path, alp: Path | None, index_dir: Path, work: Path) -> dict:
    env = dict(os.environ, XDG_CONFIG_HOME=str(work / "config"))
    code = ("from bench.tui_bench import child; "
            f"child({str(profile)!r}, {str(alp or '')!r}, {str(index_dir)!r}, {str(work)!r})")
    done = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                          env=env, cwd=Path(__file__).resolve().parent.parent, check=False,
                          timeout=CHILD_TIMEOUT)
    if done.returncode != 0:
        raise RuntimeError(f"interaction bench failed (exit {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- all of it -----------------------------------------------------------------------------
def bench_tui(folder: Path | None = None, work: Path | None = None) -> dict:
    if work is None:
        with tempfile.TemporaryDirectory(prefix="pcscope-tui-bench-") as tmp:
            return bench_tui(folder, Path(tmp))
    if folder is None:
        folder = work / "big"
        if not (folder / "profile.csv.gz").exists():
            generate_big(folder)
    presets = work / "config" / "pcscope" / "presets"
    presets.mkdir(parents=True, exist_ok=True)
    (presets / "tui-bench.toml").write_text(BENCH_PRESET, encoding="utf-8")
    profile, alp = inputs_in(folder)
    index_dir = work / "idx"
    say("indexing (not timed)")
    marker = prepare_index_apart(profile, alp, index_dir)
    say("first frame")
    result = bench_first_frame(profile, alp, index_dir, marker, work)
    say(f"  {result}")
    say("interaction (child process)")
    result.update(bench_interaction(profile, alp, index_dir, work))
    result["targets"] = TARGETS
    return result


def say(text: str) -> None:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"tui_bench: {text} (this process's peak RSS so far {peak:.0f} MB)", file=sys.stderr,
          flush=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tui_bench")
    parser.add_argument("folder", nargs="?", type=Path)
    parser.add_argument("--work", type=Path)
    args = parser.parse_args(argv)
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
    compile_bytecode()
    print(json.dumps(bench_tui(args.folder, args.work), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
