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
from pcscope.core.inputs import Inputs, PathLike
from pcscope.core.workload import Workload
from pcscope.index import arrays
from pcscope.index.parts import load_parts, save_parts

FORMAT_VERSION = 1
Progress = Callable[[str], None]


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


@dataclass(frozen=True)
class IndexStore:
    """The indexes under one root folder, one per set of inputs."""

    root: Path

    @classmethod
    def at(cls, index_dir: PathLike | None = None) -> IndexStore:
        return cls(Path(index_dir) if index_dir else default_root())

    def home(self, inputs: Inputs) -> Path:
        return self.root / index_key(inputs)

    def is_current(self, inputs: Inputs) -> bool:
        """Whether these inputs have a complete index that matches them (no build needed)."""
        inputs.check()
        return _matches(self.home(inputs) / "current", _meta(inputs))

    def try_open(self, inputs: Inputs) -> Workload | None:
        """The current index of these inputs as memory maps, or None when it must be built."""
        return _load(self.home(inputs) / "current", inputs) if self.is_current(inputs) else None

    def open(self, inputs: Inputs, *, rebuild: bool = False,
             progress: Progress | None = None) -> Workload:
        """Reopen the index of these inputs, or build it (atomically) when missing or stale."""
        inputs.check()
        home, meta = self.home(inputs), _meta(inputs)  # fingerprints: each file hashed once
        if rebuild or not _matches(home / "current", meta):
            _swap(home, _build(home, inputs, meta, progress or (lambda _m: None)))
        return _load(home / "current", inputs)

    def latest_for(self, inputs: Inputs) -> Inputs | None:
        """The inputs of the newest current index of this profile with the same reader
        options (it may hold an ALP, guides, llvm-mca), or None."""
        profile = inputs.profile.resolve()
        found = []
        for meta_file in self.root.glob("*/current/meta.json"):
            earlier = _inputs_of(_read_meta(meta_file.parent) or {})
            if earlier is not None and earlier.profile == profile \
                    and earlier.options() == inputs.options():
                found.append((_mtime(meta_file), earlier))
        for _, earlier in sorted(found, key=lambda f: f[0], reverse=True):
            if all(p.is_file() for _, p in earlier.files()) and self.is_current(earlier):
                return earlier
        return None


def open_workload(
    profile: PathLike,
    *,
    alp: PathLike | None = None,
    guides: Sequence[PathLike] = (),
    mca: PathLike | None = None,
    index_dir: PathLike | None = None,
    merge_duplicates: bool = False,
    skip_bad_lines: bool = False,
    rebuild: bool = False,
    progress: Progress | None = None,
) -> Workload:
    """Open (building when needed) the index of these files: the library's short form of
    ``IndexStore.at(index_dir).open(Inputs.of(...))``."""
    inputs = Inputs.of(profile, alp=alp, guides=guides, mca=mca,
                       merge_duplicates=merge_duplicates, skip_bad_lines=skip_bad_lines)
    return IndexStore.at(index_dir).open(inputs, rebuild=rebuild, progress=progress)


def _read_meta(folder: Path) -> dict | None:
    try:
        stored = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stored if isinstance(stored, dict) else None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _inputs_of(meta: dict) -> Inputs | None:
    """The inputs a stored index was built from (paths as stored: resolved)."""
    paths: dict[str, list[Path]] = {"profile": [], "alp": [], "guide": [], "mca": []}
    try:
        for kind, fp in meta.get("files", []):
            paths[kind].append(Path(fp["path"]))
    except (KeyError, TypeError, ValueError):  # not a meta.json this version wrote
        return None
    if len(paths["profile"]) != 1:
        return None
    options = meta.get("options", {})
    return Inputs(paths["profile"][0], next(iter(paths["alp"]), None), tuple(paths["guide"]),
                  next(iter(paths["mca"]), None),
                  bool(options.get("merge_duplicates")), bool(options.get("skip_bad_lines")))


def _matches(current: Path, meta: dict) -> bool:
    stored = _read_meta(current)
    return stored is not None and {k: stored.get(k) for k in meta} == meta


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
    return load_parts(folder, profile, inputs)
