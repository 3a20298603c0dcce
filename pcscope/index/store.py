"""The persistent index: built once per set of inputs, reopened as memory maps.

Layout: ``<root>/<key>/current`` is a symlink to the last complete build
``<root>/<key>/build-<n>/``. A build is written in full, then the link is swapped with
``os.replace`` — atomic, so a crash mid-build leaves the last good index in place.
The build is reused while every input has the same size, mtime and content hash and the
format version and reader options are unchanged, and while its files match the manifest
recorded with it (see manifest.py); a damaged build is rebuilt.

Builders of one index take its writer lock (lock.py) around build and swap, so two
processes never build at once: the second waits, then reuses the first one's result.
Under the lock every build folder but the current one is a leftover (of a superseded
build, or of a builder that died) and is removed.
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
from pcscope.index import arrays, manifest
from pcscope.index.lock import writer_lock
from pcscope.index.parts import load_parts, save_parts

COUNTS = ("samples", "executions")  # formats.md §1: what the `samples` column holds
# 2: a manifest of checked files, extra columns in numbered files; 3: mechanisms
# (mechanisms.msgpack) and code-shape-qualified patterns
FORMAT_VERSION = 3
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
    verify: bool = False,
    progress: Progress | None = None,
    counts: str = "samples",
) -> Workload:
    """Reopen the index of these inputs, or build it (atomically) when missing, stale or
    damaged. ``verify``: compare every file's checksum, not only sizes and changed files.
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
            raise InputError(str(p), None, "no such file" if not p.exists() else
                             "is a directory, not a file" if p.is_dir() else "not a regular file")
    root = Path(index_dir) if index_dir else default_root()
    home = root / index_key(inputs)
    meta = _meta(inputs)
    current = home / "current"
    say = progress or (lambda _m: None)
    if not rebuild and (workload := _reopen(current, meta, inputs, verify, say)) is not None:
        return workload
    with writer_lock(home):
        # Another process may have built it while this one waited for the lock.
        if not rebuild and (workload := _reopen(current, meta, inputs, verify, say)):
            return workload
        _remove_leftovers(home)
        _swap(home, _build(home, inputs, meta, say))
    try:
        return _load(current, inputs)
    except _DAMAGE as exc:
        raise InputError(str(current.resolve()), None, f"index damaged right after its build "
                         f"({exc}): rerun with --rebuild") from None


# What loading a damaged build raises (np.load: ValueError; msgspec: DecodeError).
_DAMAGE = (OSError, ValueError, KeyError, TypeError, EOFError)


def _reopen(current: Path, meta: dict, inputs: Inputs, verify: bool,
            say: Progress) -> Workload | None:
    """The current build when it is of these inputs and intact; None otherwise."""
    stored = _stored_meta(current)
    if stored is None or {k: stored.get(k) for k in meta} != meta:
        return None
    folder = current.resolve()
    damage = manifest.problem(folder, stored.get("manifest"), deep=verify)
    if damage is None:
        try:
            return _load(current, inputs)
        except _DAMAGE as exc:
            damage = f"{type(exc).__name__}: {exc}"
    say(f"index damaged ({damage}); rebuilding")
    return None


def _stored_meta(current: Path) -> dict | None:
    try:
        return json.loads((current / manifest.META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


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
        stamped = dict(meta, pcscope=__version__, manifest=manifest.manifest(build))
        (build / manifest.META).write_text(json.dumps(stamped, indent=1), encoding="utf-8")
    except OSError as exc:
        shutil.rmtree(build, ignore_errors=True)
        raise InputError(str(home), None, f"cannot write the index ({exc.strerror or exc}); "
                         "free some space or give another --index-dir") from None
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    return build


def _swap(home: Path, build: Path) -> None:
    """Point ``current`` at ``build`` (atomically); under the writer lock."""
    tmp_link = home / f".current-{build.name}"
    os.symlink(build.name, tmp_link)
    os.replace(tmp_link, home / "current")
    _remove_leftovers(home)


def _remove_leftovers(home: Path) -> None:
    """Under the writer lock no build is in progress: every build folder but the current
    one, and any half-made link or text index, is left over. Readers of an older build keep
    their memory maps (unlinked files stay readable)."""
    live = (home / "current").resolve().name
    for stale in home.glob("build-*"):
        if stale.name != live:
            shutil.rmtree(stale, ignore_errors=True)
    for partial in [*home.glob(".current-*"), *home.glob("build-*/.text-*")]:
        if partial.is_dir() and not partial.is_symlink():
            shutil.rmtree(partial, ignore_errors=True)
        else:
            partial.unlink(missing_ok=True)


def _load(current: Path, inputs: Inputs) -> Workload:
    folder = current.resolve()
    profile = arrays.load_profile(folder / "profile")
    if profile.cycles is None:  # a cycles column is its own basis
        profile.basis = inputs.counts
    return load_parts(folder, profile, inputs)
