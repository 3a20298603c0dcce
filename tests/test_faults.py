"""Faults, not bad input: two builders at once, a builder or an analysis killed with -9, an
index folder that is read-only, index files and session stores damaged after the fact, a
full disk, and an internal error. Each ends in a working index / finished run, or in one
line ``pcscope: error: …`` with exit code 2 and nothing half-written.

Most run in-process; a real process is started only where the fault needs one (a second
builder, kill -9, another user, a file-size limit)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from pcscope.cli.main import main
from pcscope.core.engine.session_store import SessionStore
from pcscope.index.lock import writer_lock
from pcscope.index.store import open_workload

ROOT = Path(__file__).resolve().parent.parent


def profile_text(rows: int) -> str:
    lines = ["pc,samples,asm,function"]
    lines += [f"0x{0x10000 + 4 * i:x},{(i * 7919) % 1000 + 1},\"add x{i % 28}, x1, x2\",f{i // 50}"
              for i in range(rows)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def profile(tmp_path) -> Path:
    path = tmp_path / "p.csv"
    path.write_text(profile_text(2000))
    return path


def home_of(idx: Path) -> Path:
    (home,) = [p for p in idx.iterdir() if p.is_dir() and p.name != "sessions"]
    return home


def builds(home: Path) -> list[str]:
    return sorted(p.name for p in home.glob("build-*"))


def pcscope(*args: str, env: dict | None = None, prefix: tuple[str, ...] = (),
            **kw) -> subprocess.Popen:
    return subprocess.Popen([*prefix, sys.executable, "-m", "pcscope", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def one_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pcscope: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


# -- builds that cannot race ------------------------------------------------------------------
def test_a_second_builder_waits_for_the_first_and_reuses_its_build(tmp_path, profile):
    idx = tmp_path / "idx"
    first = open_workload(profile, index_dir=idx)
    home = home_of(idx)
    profile.write_text(profile_text(2001))        # stale: the next open must build
    done = threading.Event()
    result = {}

    def build() -> None:
        result["workload"] = open_workload(profile, index_dir=idx)
        done.set()

    with writer_lock(home):                       # another builder is at work
        worker = threading.Thread(target=build)
        worker.start()
        assert not done.wait(1.0), "the second builder did not wait for the lock"
        assert builds(home) == [first.folder.name]   # and has written nothing
    worker.join(60)
    assert done.is_set() and len(result["workload"].profile) == 2001
    assert builds(home) == [result["workload"].folder.name]


def test_two_processes_building_one_index_both_succeed_with_one_build(tmp_path, profile):
    idx = tmp_path / "idx"
    profile.write_text(profile_text(20000))
    procs = [pcscope("index", str(profile), "--index-dir", str(idx), "--json")
             for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
    assert json.loads(outputs[0][0]) == json.loads(outputs[1][0])
    home = home_of(idx)
    assert builds(home) == [(home / "current").resolve().name]
    assert not list(home.glob(".current-*"))


def test_kill_9_during_a_build_leaves_the_last_index_and_the_next_build_cleans_up(tmp_path):
    idx = tmp_path / "idx"
    profile = tmp_path / "p.csv"
    profile.write_text(profile_text(300))
    good = open_workload(profile, index_dir=idx)
    home = home_of(idx)
    profile.write_text(profile_text(100_000))     # a build long enough to be caught
    child = pcscope("index", str(profile), "--index-dir", str(idx))
    try:
        deadline = time.monotonic() + 120
        while len(builds(home)) < 2 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
    finally:
        child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL, "the build finished before it was killed"
    assert (home / "current").resolve() == good.folder    # the last good index stays
    assert len(builds(home)) == 2                          # and the dead builder's folder
    again = open_workload(profile, index_dir=idx)
    assert len(again.profile) == 100_000
    assert builds(home) == [again.folder.name]             # the leftover is gone


# -- indexes that check themselves --------------------------------------------------------------
def truncated(samples: Path, _values: np.ndarray) -> None:
    samples.write_bytes(samples.read_bytes()[:100])


def replaced(samples: Path, values: np.ndarray) -> None:
    np.save(samples, values[::-1] * 50)          # a valid array of the same shape


@pytest.mark.parametrize("damage", [truncated, replaced])
def test_a_damaged_array_is_found_and_the_index_rebuilt(tmp_path, profile, damage):
    idx = tmp_path / "idx"
    first = open_workload(profile, index_dir=idx)
    total = first.profile.total
    damage(first.folder / "profile" / "samples.npy", np.asarray(first.profile.samples))
    again = open_workload(profile, index_dir=idx)
    assert again.folder != first.folder and again.profile.total == total


def test_verify_finds_a_change_that_kept_size_and_mtime(tmp_path, profile):
    idx = tmp_path / "idx"
    first = open_workload(profile, index_dir=idx)
    total = first.profile.total
    samples = first.folder / "profile" / "samples.npy"
    st = samples.stat()
    np.save(samples, np.asarray(first.profile.samples) * 3)
    os.utime(samples, ns=(st.st_atime_ns, st.st_mtime_ns))
    fooled = open_workload(profile, index_dir=idx)        # the cheap check trusts it
    assert fooled.folder == first.folder
    checked = open_workload(profile, index_dir=idx, verify=True)
    assert checked.folder != first.folder and checked.profile.total == total


@pytest.mark.parametrize("damage", ["metadata garbage", "missing pattern file",
                                    "guides garbage"])
def test_other_damage_is_rebuilt_too(tmp_path, profile, damage):
    idx = tmp_path / "idx"
    first = open_workload(profile, index_dir=idx)
    if damage == "metadata garbage":
        (first.folder / "meta.json").write_text("{not json")
    elif damage == "missing pattern file":
        next((first.folder / "patterns").glob("*.npy")).unlink()
    else:
        (first.folder / "guides.msgpack").write_bytes(b"\xc1" * 10)
    again = open_workload(profile, index_dir=idx)
    assert again.folder != first.folder and again.profile.total == first.profile.total


# -- read-only index folder ---------------------------------------------------------------------
def as_another_user() -> tuple[str, ...]:
    """Run a child as `nobody` when the tests run as root (root ignores permissions)."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: no user for whom modes apply")
    return ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")


@pytest.mark.parametrize("with_text", [True, False], ids=["text index built", "no text yet"])
def test_search_on_a_read_only_index(with_text):
    top = Path(tempfile.mkdtemp(prefix="pcscope-ro-"))     # readable by the other user
    try:
        top.chmod(0o755)
        profile = top / "p.csv"
        profile.write_text(profile_text(200))
        idx = top / "idx"
        workload = open_workload(profile, index_dir=idx)
        if with_text:
            assert workload.text.rows == 200
        for path in [idx, *idx.rglob("*")]:
            if os.geteuid() == 0:
                os.chown(path, 65534, 65534, follow_symlinks=False)
            if not path.is_symlink():
                path.chmod(0o555 if path.is_dir() else 0o444)
        env = {**os.environ, "XDG_CACHE_HOME": str(top / "cache"),
               "XDG_STATE_HOME": str(top / "state"), "HOME": str(top)}
        child = pcscope("search", str(profile), "add", "--index-dir", str(idx), env=env,
                        prefix=as_another_user(), cwd=top)
        out, err = child.communicate(timeout=120)
        if with_text:
            assert child.returncode == 0, err
            assert "instructions match" in out
        else:
            assert child.returncode == 2
            assert "read-only" in one_error_line(err)
    finally:
        for path in [top, *top.rglob("*")]:
            if not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(top, ignore_errors=True)


# -- full disk ----------------------------------------------------------------------------------
def small_files(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)    # EFBIG instead of a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    return apply


def test_a_full_disk_during_a_build_is_one_line_and_no_build_is_left(tmp_path):
    profile = tmp_path / "p.csv"
    profile.write_text(profile_text(50_000))
    idx = tmp_path / "idx"
    child = pcscope("index", str(profile), "--index-dir", str(idx),
                    preexec_fn=small_files(64 * 1024))
    _out, err = child.communicate(timeout=300)
    assert child.returncode == 2
    line = one_error_line(err)
    assert "cannot write the index" in line and str(idx) in line
    assert not builds(home_of(idx)) and not (home_of(idx) / "current").exists()


def test_a_full_disk_while_importing_names_the_output_and_leaves_no_file(tmp_path):
    script = tmp_path / "s.txt"
    script.write_text("".join(f"    1000  7f00000{i:05x} func (/lib/x.so)\n" for i in range(20000)))
    out = tmp_path / "out.csv"
    child = pcscope("import", "perf", "--script", str(script), "-o", str(out),
                    preexec_fn=small_files(16 * 1024))
    _stdout, err = child.communicate(timeout=300)
    assert child.returncode == 2
    assert str(out) in one_error_line(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.txt"]


def test_a_full_disk_under_the_session_store_is_one_line(tmp_path):
    idx = tmp_path / "idx"
    profile = tmp_path / "p.csv"
    profile.write_text(profile_text(2000))
    guide = ROOT / "pcscope" / "samples" / "guides" / "swopt.md"
    open_workload(profile, index_dir=idx, guides=[guide])   # the index fits; the run won't
    session = tmp_path / "s.sqlite"
    child = pcscope("analyze", str(profile), "--index-dir", str(idx), "--model", "scripted:ok",
                    "--top", "40", "--guide", str(guide), "--session", str(session), "--quiet",
                    preexec_fn=small_files(48 * 1024))
    _out, err = child.communicate(timeout=300)
    assert child.returncode == 2
    line = one_error_line(err)
    assert str(session) in line and "cannot be written" in line and "disk" in line


# -- damaged session store, kill -9 during an analysis -----------------------------------------
def test_a_damaged_session_is_reported_and_only_fresh_starts_anew(tmp_path, capsys):
    profile = tmp_path / "p.csv"
    profile.write_text(profile_text(300))
    session = tmp_path / "s.sqlite"
    session.write_bytes(b"SQLite format 3\x00" + os.urandom(4000))
    argv = ["analyze", str(profile), "--index-dir", str(tmp_path / "idx"), "--session",
            str(session), "--quiet"]
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert str(session) in line and "corrupt" in line and "--fresh" in line
    assert session.read_bytes().startswith(b"SQLite format 3")      # left as it was
    assert main([*argv, "--fresh"]) == 0
    assert list(tmp_path.glob("s.sqlite.damaged-*"))
    with SessionStore(session) as store:
        assert [r.status for r in store.runs()] == ["done"]


def test_kill_9_during_an_analysis_keeps_finished_calls_and_resume_finishes(tmp_path, capsys):
    idx = tmp_path / "idx"
    profile = tmp_path / "p.csv"
    profile.write_text(profile_text(2000))      # 40 functions: a call per few windows
    common = ["analyze", str(profile), "--index-dir", str(idx), "--top", "16", "--depth", "1",
              "--concurrency", "1", "--quiet", "--guide", str(ROOT / "pcscope" / "samples" /
                                                               "guides" / "swopt.md")]
    assert main([*common, "--model", "scripted:ok", "--session", str(tmp_path / "ref.sqlite")]) == 0
    with SessionStore(tmp_path / "ref.sqlite") as store:
        want = sorted(c.id for c in store.calls())
    assert len(want) >= 3
    session = tmp_path / "s.sqlite"
    killed = [*common, "--model", "scripted:ok@0.6", "--session", str(session)]
    child = pcscope(*killed)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            if session.exists():
                with SessionStore(session) as store:
                    if sum(c.status == "ok" for c in store.calls()) >= 1:
                        break
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
    finally:
        child.communicate(timeout=60)
    with SessionStore(session) as store:
        (run,) = store.runs()
        before = {c.id: c.seconds for c in store.calls(run.id) if c.status == "ok"}
    assert run.status == "running" and 1 <= len(before) < len(want)
    assert main([*killed, "--resume"]) == 0
    with SessionStore(session) as store:
        assert [(r.id, r.status) for r in store.runs()] == [(run.id, "done")]
        calls = store.calls(run.id)
    assert sorted(c.id for c in calls) == want                    # each call once
    # kept, not rerun: a replayed call keeps its recorded duration to the microsecond
    assert {c.id: c.seconds for c in calls if c.id in before} == before
    capsys.readouterr()


# -- internal errors ----------------------------------------------------------------------------
def test_an_internal_error_is_one_line_naming_its_trace_file(tmp_path, capsys, monkeypatch):
    from pcscope.cli import cmd_index

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))

    def broken(_args):
        raise KeyError("a bug")

    monkeypatch.setattr(cmd_index, "run", broken)
    monkeypatch.setattr(cmd_index, "register", _registering(cmd_index.register, broken))
    assert main(["index", str(tmp_path / "p.csv")]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "internal error (KeyError)" in line
    trace = Path(line.rsplit(" ", 1)[1])
    assert trace.is_relative_to(tmp_path / "state") and "KeyError: 'a bug'" in trace.read_text()


def _registering(register, func):
    def wrapped(sub):
        register(sub)
        sub.choices["index"].set_defaults(func=func)
    return wrapped


def test_the_explorer_reports_a_damaged_session_and_opens_fresh_only_when_asked(tmp_path):
    from pcscope.core.errors import InputError
    from pcscope.core.inputs import Inputs
    from pcscope.tui.launch import OpenRequest, prepare

    profile = tmp_path / "p.csv"
    profile.write_text(profile_text(300))
    session = tmp_path / "s.sqlite"
    session.write_bytes(b"not a database at all " * 200)
    guide = ROOT / "pcscope" / "samples" / "guides" / "swopt.md"
    request = OpenRequest(Inputs(profile, guides=(guide,)), index_dir=tmp_path / "idx",
                          session=session)
    with pytest.raises(InputError) as err:
        prepare(request, lambda _step: None)
    assert "corrupt" in str(err.value) and session.read_bytes().startswith(b"not a database")
    prepared = prepare(OpenRequest(**{**vars(request), "fresh": True}), lambda _step: None)
    assert prepared.restored.run is None and list(tmp_path.glob("s.sqlite.damaged-*"))


def test_calls_that_fail_are_named_even_when_quiet(tmp_path, capsys):
    """A run where some calls failed still reports, but says which part is missing."""
    profile = tmp_path / "p.csv"
    profile.write_text(profile_text(2000))
    argv = ["analyze", str(profile), "--index-dir", str(tmp_path / "idx"), "--top", "16",
            "--depth", "1", "--concurrency", "1", "--quiet", "--session",
            str(tmp_path / "s.sqlite")]
    assert main([*argv, "--model", "scripted:fail+ok"]) == 0
    err = capsys.readouterr().err
    assert "pcscope: warning:" in err and "calls failed" in err
    assert main([*argv, "--model", "scripted:ok"]) == 0
    assert "calls failed" not in capsys.readouterr().err
