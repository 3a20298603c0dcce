"""The derived parts of an index build beside the profile arrays: patterns, ALP, guides, and
the two parts built on first use (the text index and the mechanisms), each under the index's
writer lock into a folder of its own."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pcscope.core.collector import collector_paused
from pcscope.core.errors import InputError
from pcscope.core.pattern_table import PatternTable
from pcscope.core.profile import Profile
from pcscope.core.workload import Workload
from pcscope.index import manifest
from pcscope.index.arrays import mapped
from pcscope.index.lock import writer_lock
from pcscope.index.memory import return_free_memory

if TYPE_CHECKING:
    from pcscope.core.alp import AlpTable
    from pcscope.core.inputs import Inputs
    from pcscope.core.mechanisms import MechanismTable
    from pcscope.core.queries import Queries
    from pcscope.core.readers.guides import GuideSection

Progress = Callable[[str], None]
# The parts built on first use, each a folder of the build (named so leftovers are found).
TEXT, MECHANISMS = "text", "mechanisms"
PARTS = (TEXT, MECHANISMS)
_DONE = "done.json"  # the mechanisms part's manifest, written last


def save_parts(build: Path, profile: Profile, inputs: Inputs, say: Progress) -> None:
    # Readers, finders and the msgpack codec are imported here, each reader only when its
    # input is given: a reopen for one lookup needs none of them, and they cost start-up
    # time.
    import msgspec

    from pcscope.core.patterns import code_facts, find_patterns

    say("finding patterns")
    facts = code_facts(profile)
    return_free_memory()  # the facts' temporaries, before the pattern pass adds its own
    patterns = find_patterns(profile, facts)
    del facts
    folder = build / "patterns"
    folder.mkdir()
    for name, array in patterns.to_arrays().items():
        np.save(folder / f"{name}.npy", array, allow_pickle=False)
    return_free_memory()  # the pattern pass's temporaries
    sections: list[GuideSection] = []
    if inputs.guides:  # only then: the reader's imports (pypdf's among them)
        from pcscope.core.readers.guides import read_guide
    for guide in inputs.guides:
        say(f"reading guide {guide.name}")
        sections += read_guide(guide)
    (build / "guides.msgpack").write_bytes(msgspec.msgpack.encode(sections))
    if inputs.mca:
        from pcscope.core.importers.mca import read_mca

        say(f"reading llvm-mca evidence {inputs.mca.name}")
        (build / "mca.msgpack").write_bytes(msgspec.msgpack.encode(read_mca(inputs.mca)))


def save_alp_part(build: Path, profile: Profile, inputs: Inputs, say: Progress) -> None:
    """The ALP's per-PC table, if an ALP is given. Called once the build's own threads have
    ended: the reader forks its decoding process (alp_blocks), and a fork while another
    thread of ours holds a lock could leave the child waiting on it."""
    if not inputs.alp:
        return
    from pcscope.core.readers.alp import read_alp
    from pcscope.index.alp_store import save_alp

    say(f"aggregating ALP {inputs.alp.name}")
    table = read_alp(inputs.alp, profile_pcs=profile.pc, skip_bad_lines=inputs.skip_bad_lines)
    save_alp(table, build / "alp")


def load_parts(folder: Path, profile: Profile, inputs: Inputs) -> Workload:
    pattern_arrays = {
        p.stem: mapped(p)
        for p in (folder / "patterns").glob("*.npy")
    }
    # Read now, decoded on first use: a workload opened from a fresh build keeps working
    # after a later open moves that build folder, and a lookup that needs no guides never
    # imports the msgpack codec.
    guides = (folder / "guides.msgpack").read_bytes()

    def load_guides() -> list[GuideSection]:
        import msgspec

        from pcscope.core.readers.guides import GuideSection

        with collector_paused():  # what it makes lives as long as the workload
            return msgspec.msgpack.decode(guides, type=list[GuideSection])

    def load_alp_part() -> AlpTable | None:
        if not (folder / "alp").exists():
            return None
        from pcscope.index.alp_store import load_alp  # a reopen without ALP never needs it

        return load_alp(folder / "alp")

    def load_mca() -> dict[int, dict]:
        path = folder / "mca.msgpack"
        if not path.exists():
            return {}
        import msgspec

        return msgspec.msgpack.decode(path.read_bytes(), type=dict[int, dict])

    patterns = PatternTable.from_arrays(pattern_arrays, profile)

    def open_text():
        from pcscope.index.text import TextIndex

        return open_text_index(folder / TEXT, profile, workload.guides, TextIndex)

    workload = Workload(
        profile=profile,
        patterns=patterns,
        guide_loader=load_guides,
        folder=folder,
        alp_loader=load_alp_part,
        text_loader=open_text,
        mca_loader=load_mca,
        mechanism_loader=lambda: open_mechanisms(folder / MECHANISMS, profile, patterns),
        query_loader=query_engine,
        alp_path=inputs.alp,
        guide_paths=inputs.guides,
    )
    return workload


def query_engine(workload: Workload) -> Queries:
    # polars loads with the engine, on the first query rather than when the index opens.
    from pcscope.index.query import QueryEngine

    return QueryEngine.of(workload)


def open_text_index(target: Path, profile: Profile, sections: list[GuideSection], cls):
    """Open the text index, building it first when missing (one of another format is built
    anew)."""

    def complete(folder: Path) -> bool:
        return (folder / "done").exists() and cls.current(folder)

    def make(folder: Path) -> None:
        cls.build(folder, profile, sections)
        (folder / "done").touch()

    if not complete(target):
        if not os.access(target.parent, os.W_OK):
            raise InputError(str(target.parent), None, "index folder is read-only and has no "
                             "current text index: search it once where it is writable, or "
                             "give another --index-dir")
        _build_part(target, complete, make)
    return cls.open(target)   # reading needs no lock, nor a writable folder


def open_mechanisms(target: Path, profile: Profile, patterns: PatternTable) -> MechanismTable:
    """The pattern sites grouped into mechanisms: stored in ``target`` by the first use
    (``pcscope index`` makes it; an analysis, a lookup or the explorer otherwise). An index
    folder that cannot take it (read-only, or a build superseded meanwhile) gets them
    grouped in memory, for this process only."""
    # Imported by their first use: a build or a reopen for a lookup needs neither the store
    # nor the mechanism types (~25 ms of imports).
    from pcscope.index.mechanism_store import load_mechanisms, save_mechanisms

    def complete(folder: Path) -> bool:
        try:
            recorded = json.loads((folder / _DONE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(recorded, dict) and manifest.problem(folder, recorded) is None

    def make(folder: Path) -> None:
        save_mechanisms(_grouped(profile, patterns), folder)
        (folder / _DONE).write_text(json.dumps(manifest.manifest(folder)), encoding="utf-8")

    if complete(target):
        return load_mechanisms(target)
    if not os.access(target.parent, os.W_OK):
        return _grouped(profile, patterns)
    _build_part(target, complete, make)
    return load_mechanisms(target)


def _grouped(profile: Profile, patterns: PatternTable) -> MechanismTable:
    # The finder is imported only by the first use: a reopen for a lookup never loads it.
    from pcscope.core.mechanism_finder import find_mechanisms
    from pcscope.core.patterns import code_facts

    with collector_paused():  # what it makes lives on (~0.1 s of passes saved at 1M rows)
        table = find_mechanisms(profile, patterns, code_facts(profile))
    return_free_memory()  # the facts' and the finder's temporaries
    return table


def _build_part(target: Path, complete: Callable[[Path], bool],
                make: Callable[[Path], None]) -> None:
    """Make the part ``target`` of a build folder with ``make`` in a temporary folder beside
    it, then rename it into place, under the index's writer lock, so two processes never
    build it at once (the second finds it ``complete``) and a crash leaves no half part."""
    import tempfile  # only a build makes temporary folders: a reopen never loads it

    with writer_lock(target.parent.parent):
        if complete(target):   # built meanwhile
            return
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
        try:
            make(tmp)
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
