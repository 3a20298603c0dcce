"""The persistent index: reuse when unchanged, rebuild when changed, atomic on failure."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from pcscope.core.errors import InputError
from pcscope.index import store
from pcscope.index.store import open_workload

PROFILE = """function,pc,samples,asm
f,0x1000,10,"ldr x1, [x0]"
f,0x1004,20,"ldr x2, [x1, #8]"
f,0x1008,5,"cbnz x2, 0x1000"
g,0x2000,1,ret
"""


@pytest.fixture()
def profile(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text(PROFILE)
    return path


def build_of(index_dir) -> str:
    (home,) = [p for p in index_dir.iterdir()]
    return os.readlink(home / "current")


def test_reopen_reuses_the_build(tmp_path, profile):
    idx = tmp_path / "idx"
    first = open_workload(profile, index_dir=idx)
    name = build_of(idx)
    again = open_workload(profile, index_dir=idx)
    assert build_of(idx) == name
    assert np.array_equal(first.profile.pc, again.profile.pc)
    assert isinstance(again.profile.pc.base, np.memmap)  # reopened as a memory map, not parsed


def test_changed_content_rebuilds(tmp_path, profile):
    idx = tmp_path / "idx"
    open_workload(profile, index_dir=idx)
    name = build_of(idx)
    st = profile.stat()
    profile.write_text(PROFILE.replace("0x2000,1,", "0x2000,2,"))
    os.utime(profile, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime, same size
    w = open_workload(profile, index_dir=idx)
    assert build_of(idx) != name
    assert int(w.profile.samples[w.profile.row_of(0x2000)]) == 2
    assert len(list((idx / os.listdir(idx)[0]).glob("build-*"))) == 1  # the old one is gone


def built_an_hour_later(profile, idx) -> tuple[str, int]:
    """Index a profile last changed an hour before: (the build's name, that mtime)."""
    hour_ago = profile.stat().st_mtime_ns - 3600 * 10**9
    os.utime(profile, ns=(hour_ago, hour_ago))
    open_workload(profile, index_dir=idx)
    return build_of(idx), hour_ago


def samples_at_0x2000(workload) -> int:
    return int(workload.profile.samples[workload.profile.row_of(0x2000)])


def test_unchanged_size_and_old_mtime_reuse_the_recorded_hash(tmp_path, profile):
    """A reopen reads no input whose size and mtime are as recorded (when it last changed
    well before the build): only --verify sees a same-size edit that kept the mtime."""
    idx = tmp_path / "idx"
    name, mtime = built_an_hour_later(profile, idx)
    profile.write_text(PROFILE.replace("0x2000,1,", "0x2000,2,"))
    os.utime(profile, ns=(mtime, mtime))  # same size, mtime put back
    w = open_workload(profile, index_dir=idx)
    assert build_of(idx) == name and samples_at_0x2000(w) == 1
    w = open_workload(profile, index_dir=idx, verify=True)
    assert build_of(idx) != name and samples_at_0x2000(w) == 2


def test_touched_input_is_read_again(tmp_path, profile):
    """A new mtime (same size) is a change until the content says otherwise: rebuilt."""
    idx = tmp_path / "idx"
    name, mtime = built_an_hour_later(profile, idx)
    profile.write_text(PROFILE.replace("0x2000,1,", "0x2000,3,"))
    os.utime(profile, ns=(mtime + 10**9, mtime + 10**9))
    w = open_workload(profile, index_dir=idx)
    assert build_of(idx) != name and samples_at_0x2000(w) == 3


def test_format_version_change_rebuilds(tmp_path, profile, monkeypatch):
    idx = tmp_path / "idx"
    open_workload(profile, index_dir=idx)
    name = build_of(idx)
    monkeypatch.setattr(store, "FORMAT_VERSION", store.FORMAT_VERSION + 1)
    open_workload(profile, index_dir=idx)
    assert build_of(idx) != name


def test_reader_options_are_part_of_the_key(tmp_path, profile):
    idx = tmp_path / "idx"
    open_workload(profile, index_dir=idx)
    name = build_of(idx)
    open_workload(profile, index_dir=idx, merge_duplicates=True)
    assert build_of(idx) != name


def test_failed_build_leaves_the_last_good_index(tmp_path, profile):
    idx = tmp_path / "idx"
    open_workload(profile, index_dir=idx)
    name = build_of(idx)
    profile.write_text(PROFILE + "h,0x3000,-1,nop\n")
    with pytest.raises(InputError) as err:
        open_workload(profile, index_dir=idx)
    assert err.value.line == 6
    home = next(idx.iterdir())
    assert build_of(idx) == name
    # no half-written build (the writer lock's file stays: it is how builders take turns)
    assert sorted(p.name for p in home.iterdir()) == sorted([".lock", "current", name])


def test_a_failed_write_of_the_arrays_fails_the_build(tmp_path, profile, monkeypatch):
    """A write error ends the build as one that writes nothing, and no build folder is
    left."""
    from pcscope.index import arrays

    def full_disk(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(arrays, "save_profile", full_disk)
    idx = tmp_path / "idx"
    threads = threading.active_count()
    with pytest.raises(InputError, match="cannot write the index"):
        open_workload(profile, index_dir=idx)
    assert sorted(p.name for p in next(idx.iterdir()).iterdir()) == [".lock"]
    assert threading.active_count() == threads  # the arrays' writer is gone


def test_a_failed_pattern_pass_waits_for_the_arrays_writer(tmp_path, profile, monkeypatch):
    """The arrays are written on a thread while the patterns are found: an error of the
    patterns is raised as it was, after the writer ends, and no build folder is left."""
    from pcscope.core import patterns

    def failing(*_args):
        raise InputError("p.csv", 2, "bad row")

    monkeypatch.setattr(patterns, "find_patterns", failing)
    idx = tmp_path / "idx"
    threads = threading.active_count()
    with pytest.raises(InputError) as err:
        open_workload(profile, index_dir=idx)
    assert (err.value.line, threading.active_count()) == (2, threads)
    assert sorted(p.name for p in next(idx.iterdir()).iterdir()) == [".lock"]


def test_missing_input_is_an_input_error(tmp_path):
    with pytest.raises(InputError) as err:
        open_workload(tmp_path / "nope.csv", index_dir=tmp_path / "idx")
    assert "no such file" in err.value.what
    assert not (tmp_path / "idx").exists()


def test_alp_part_reopens_equal(tmp_path, profile):
    alp = tmp_path / "alp.jsonl"
    alp.write_text(
        '{"loop": "L1", "pc": "0x1004", "iterations": 100, "stages": {"dispatch": 3, "issue": 9},'
        ' "mem": {"kind": "load", "accesses": 100, "l1d_miss": 40, "avg_latency": 30.0}}\n'
        '{"loop": "L2", "pc": "0x1004", "iterations": 300, "stages": {"dispatch": 3, "issue": 5},'
        ' "mem": {"kind": "load", "accesses": 300, "l1d_miss": 0, "avg_latency": 4.0}}\n'
        '{"pc": "0x9999", "iterations": 1}\n'
    )
    first = open_workload(profile, alp=alp, index_dir=tmp_path / "idx")
    again = open_workload(profile, alp=alp, index_dir=tmp_path / "idx")
    for w in (first, again):
        rec = w.alp.get(0x1004)
        assert rec.iterations == 400 and rec.stages["issue"] == pytest.approx(6.0)
        assert rec.mem.l1d_miss_rate == pytest.approx(0.1)
        assert rec.mem.avg_latency == pytest.approx((100 * 30 + 300 * 4) / 400)
        assert [r.loop for r in w.alp.per_loop[0x1004]] == ["L1", "L2"]
        assert w.alp.get(0x9999).matched is False
        assert w.alp.file_stats.unmatched == 1
    assert first.alp.get(0x1004).to_json() == again.alp.get(0x1004).to_json()


def test_pcscope_index_leaves_search_ready(tmp_path, profile, capsys):
    """`pcscope index` builds the Tantivy index too: a reopen finds it complete."""
    from pcscope.cli.main import main

    idx = tmp_path / "idx"
    assert main(["index", str(profile), "--index-dir", str(idx), "--json"]) == 0
    capsys.readouterr()
    again = open_workload(profile, index_dir=idx)
    assert (again.folder / "text" / "done").exists()
    assert not again.text_ready
    rows, total = again.text.search("ldr", 10)
    assert again.text_ready and total == 2 and sorted(rows.tolist()) == [0, 1]


def test_text_index_of_another_format_is_built_anew(tmp_path, profile):
    """An index whose text part an older pcscope wrote is searched after a rebuild of that
    part, never read as the new format."""
    import json

    from pcscope.index.text import FORMAT, META

    idx = tmp_path / "idx"
    assert open_workload(profile, index_dir=idx).text.search("ldr", 10)[1] == 2
    meta_path = open_workload(profile, index_dir=idx).folder / "text" / META
    meta = json.loads(meta_path.read_text())
    meta["format"] = FORMAT - 1
    meta_path.write_text(json.dumps(meta))
    again = open_workload(profile, index_dir=idx)
    rows, total = again.text.search("ldr", 10)
    assert total == 2 and sorted(rows.tolist()) == [0, 1]
    assert json.loads((again.folder / "text" / META).read_text())["format"] == FORMAT


def test_concurrent_first_uses_build_the_text_index_once(tmp_path, profile, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from pcscope.index.text import TextIndex

    builds = []
    real_build = TextIndex.build.__func__

    def counted(cls, *args, **kwargs):
        builds.append(1)
        return real_build(cls, *args, **kwargs)

    monkeypatch.setattr(TextIndex, "build", classmethod(counted))
    workload = open_workload(profile, index_dir=tmp_path / "idx")
    loader = workload.text_loader
    with ThreadPoolExecutor(4) as pool:
        opened = list(pool.map(lambda _: loader(), range(4)))
    assert len(builds) == 1
    assert all(t.rows == 4 for t in opened)


def test_reopen_reads_the_window_order_by_weight_stored_at_build(tmp_path):
    """Equal weights tie by the lower first PC; the order is read, not sorted again."""
    path = tmp_path / "w.csv"
    rows = [("a", 0x3000, 5), ("a", 0x3004, 5), ("b", 0x1000, 10), ("c", 0x2000, 10),
            ("d", 0x4000, 30), ("e", 0x500, 1)]
    path.write_text("function,window,pc,samples,asm\n" + "".join(
        f"{w},{w},{hex(pc)},{n},nop\n" for w, pc, n in rows))
    open_workload(path, index_dir=tmp_path / "idx")
    p = open_workload(path, index_dir=tmp_path / "idx").profile
    assert isinstance(p.windows_by_weight().base, np.memmap)
    assert [p.windows[int(w)].label for w in p.windows_by_weight()] == ["d", "b", "c", "a", "e"]
    fresh = np.lexsort((p.windows.first_pcs(), -p.windows.value))
    assert np.array_equal(p.windows_by_weight(), fresh)
