"""The derived parts of an index build beside the profile arrays: patterns, ALP, guides, text."""

from __future__ import annotations

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
from pcscope.index.lock import writer_lock
from pcscope.index.mechanism_store import load_mechanisms, save_mechanisms
from pcscope.index.memory import return_free_memory

if TYPE_CHECKING:
    from pcscope.core.alp import AlpTable
    from pcscope.core.inputs import Inputs
    from pcscope.core.queries import Queries
    from pcscope.core.readers.guides import GuideSection

Progress = Callable[[str], None]


def save_parts(build: Path, profile: Profile, inputs: Inputs, say: Progress) -> None:
    # Readers, finders and the msgpack codec are imported here, each reader only when its
    # input is given: a reopen for one lookup needs none of them, and they cost start-up
    # time.
    import msgspec

    from pcscope.core.mechanism_finder import find_mechanisms
    from pcscope.core.patterns import code_facts, find_patterns
    from pcscope.core.readers.guides import read_guide

    say("finding patterns")
    facts = code_facts(profile)
    patterns = find_patterns(profile, facts)
    folder = build / "patterns"
    folder.mkdir()
    for name, array in patterns.to_arrays().items():
        np.save(folder / f"{name}.npy", array, allow_pickle=False)
    return_free_memory()  # the pattern pass's temporaries
    say("grouping mechanisms")
    mechanisms = find_mechanisms(profile, patterns, facts)
    save_mechanisms(mechanisms, build)
    sections: list[GuideSection] = []
    for guide in inputs.guides:
        say(f"reading guide {guide.name}")
        sections += read_guide(guide)
    (build / "guides.msgpack").write_bytes(msgspec.msgpack.encode(sections))
    if inputs.mca:
        from pcscope.core.importers.mca import read_mca

        say(f"reading llvm-mca evidence {inputs.mca.name}")
        (build / "mca.msgpack").write_bytes(msgspec.msgpack.encode(read_mca(inputs.mca)))
    if inputs.alp:
        from pcscope.core.readers.alp import read_alp
        from pcscope.index.alp_store import save_alp

        say(f"aggregating ALP {inputs.alp.name}")
        table = read_alp(inputs.alp, profile_pcs=profile.pc, skip_bad_lines=inputs.skip_bad_lines)
        save_alp(table, build / "alp")


def load_parts(folder: Path, profile: Profile, inputs: Inputs) -> Workload:
    pattern_arrays = {
        p.stem: np.load(p, mmap_mode="r", allow_pickle=False)
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

    mechanisms = load_mechanisms(folder)

    def open_text():
        from pcscope.index.text import TextIndex

        return open_text_index(folder / "text", profile, workload.guides, TextIndex)

    workload = Workload(
        profile=profile,
        patterns=PatternTable.from_arrays(pattern_arrays, profile),
        guide_loader=load_guides,
        folder=folder,
        alp_loader=load_alp_part,
        text_loader=open_text,
        mca_loader=load_mca,
        mechanism_loader=lambda: mechanisms,
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
    """Open the text index, building it first (into a temp folder, then renamed) under
    the index's writer lock, so two processes never build it at once; one of another
    format is built anew."""
    if (target / "done").exists() and cls.current(target):
        return cls.open(target)   # reading needs no lock, nor a writable folder
    if not os.access(target.parent, os.W_OK):
        raise InputError(str(target.parent), None, "index folder is read-only and has no "
                         "current text index: search it once where it is writable, or "
                         "give another --index-dir")
    import tempfile  # only a build makes temporary folders: a reopen never loads it

    with writer_lock(target.parent.parent):
        if (target / "done").exists() and cls.current(target):   # built meanwhile
            return cls.open(target)
        tmp = Path(tempfile.mkdtemp(prefix=".text-", dir=target.parent))
        try:
            cls.build(tmp, profile, sections)
            (tmp / "done").touch()
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return cls.open(target)
