"""The persistent index: built once per set of inputs, reopened as memory maps.

Layout: ``<root>/<key>/current`` is a symlink to the last complete build
``<root>/<key>/build-<n>/``. A build is written in full, then the link is swapped with
``os.replace`` — atomic, so a crash mid-build leaves the last good index in place.
The build is reused while every input has the same size, mtime and content hash and the
format version and reader options are unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pcscope import __version__
from pcscope.core.errors import InputError
from pcscope.core.workload import Workload
from pcscope.index import arrays
from pcscope.index.parts import load_parts, save_parts

COUNTS = ("samples", "executions")  # formats.md §1: what the `samples` column holds
FORMAT_VERSION = 2  # 2: mechanisms (mechanisms.msgpack), qualified patterns
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Inputs:
    profile: Path
    alp: Path | None = None
    guides: tuple[Path, ...] = ()
    mca: Path | None = None
    merge_duplicates: bool = False
    skip_bad_lines: bool = False
    counts: str = "samples"  # what the `samples` column holds: samples or executions

    def files(self) -> list[tuple[str, Path]]:
        out = [("profile", self.profile)]
        if self.alp:
            out.append(("alp", self.alp))
        out += [("guide", g) for g in self.guides]
        if self.mca:
            out.append(("mca", self.mca))
        return out

    def options(self) -> dict:
        return {"merge_duplicates": self.merge_duplicates, "skip_bad_lines": self.skip_bad_lines,
                "counts": self.counts}


def default_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pcscope" / "index"


def index_key(inputs: Inputs) -> str:
    """One index folder per profile path and set of other inputs (content is checked apart)."""
    names = [str(p.resolve()) for _, p in inputs.files()]
    return hashlib.blake2b("\0".join(names).encode(), digest_size=8).hexdigest()


def fingerprint(path: Path) -> dict:
    try:
        st = path.stat()
    except FileNotFoundError:
        raise InputError(str(path), None, "no such file") from None
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "hash": digest.hexdigest()}


def _meta(inputs: Inputs) -> dict:
    return {
        "format": FORMAT_VERSION,
        "files": [[kind, fingerprint(p)] for kind, p in inputs.files()],
        "options": inputs.options(),
    }


def open_workload(
    profile: str | os.PathLike,
    *,
    alp: str | os.PathLike | None = None,
    guides: Sequence[str | os.PathLike] = (),
    mca: str | os.PathLike | None = None,
    index_dir: str | os.PathLike | None = None,
    merge_duplicates: bool = False,
    skip_bad_lines: bool = False,
    rebuild: bool = False,
    progress: Progress | None = None,
    counts: str = "samples",
) -> Workload:
    """Reopen the index of these inputs, or build it (atomically) when missing or stale.
    ``counts`` says what the profile's counts are (``samples`` or exact ``executions``)."""
    if counts not in COUNTS:
        raise InputError(str(profile), None, f"unknown counts {counts!r} (want "
                         f"{' or '.join(COUNTS)})")
    inputs = Inputs(
        Path(profile),
        Path(alp) if alp else None,
        tuple(Path(g) for g in guides),
        Path(mca) if mca else None,
        merge_duplicates,
        skip_bad_lines,
        counts,
    )
    for _, p in inputs.files():
        if not p.is_file():
            raise InputError(str(p), None, "no such file" if not p.exists() else "not a file")
    root = Path(index_dir) if index_dir else default_root()
    home = root / index_key(inputs)
    meta = _meta(inputs)
    current = home / "current"
    if not rebuild and _matches(current, meta):
        return _load(current, inputs)
    build = _build(home, inputs, meta, progress or (lambda _m: None))
    _swap(home, build)
    return _load(current, inputs)


def _matches(current: Path, meta: dict) -> bool:
    try:
        stored = json.loads((current / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return {k: stored.get(k) for k in meta} == meta


def _build(home: Path, inputs: Inputs, meta: dict, say: Progress) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    # Parsing needs polars; reopening does not, so its import waits until a build.
    from pcscope.core.readers.profile_csv import read_profile

    build = Path(tempfile.mkdtemp(prefix="build-", dir=home))
    try:
        say(f"reading {inputs.profile.name}")
        profile = read_profile(
            inputs.profile, merge_duplicates=inputs.merge_duplicates, progress=say
        )
        arrays.save_profile(profile, build / "profile")
        save_parts(build, profile, inputs, say)
        stamped = dict(meta, pcscope=__version__)
        (build / "meta.json").write_text(json.dumps(stamped, indent=1), encoding="utf-8")
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    return build


def _swap(home: Path, build: Path) -> None:
    tmp_link = home / f".current-{build.name}"
    os.symlink(build.name, tmp_link)
    os.replace(tmp_link, home / "current")
    # Readers of an older build keep their memory maps: unlinked files stay readable.
    for stale in home.glob("build-*"):
        if stale != build:
            shutil.rmtree(stale, ignore_errors=True)


def _load(current: Path, inputs: Inputs) -> Workload:
    folder = current.resolve()
    profile = arrays.load_profile(folder / "profile")
    if profile.cycles is None:  # a cycles column is its own basis
        profile.basis = inputs.counts
    return load_parts(folder, profile, inputs)
