"""The persistent index: built once per set of inputs, reopened as memory maps.

Layout: ``<root>/<key>/current`` is a symlink to the last complete build
``<root>/<key>/build-<n>/``. A build is written in full, then the link is swapped with
``os.replace`` — atomic, so a crash mid-build leaves the last good index in place.
The build is reused while every input has the same size, mtime and content hash and the
format version and reader options are unchanged, and while its files match the manifest
recorded with it (see manifest.py); a damaged build is rebuilt. An input whose size and
mtime are as recorded keeps its recorded hash without being read again (a reopen then costs
a stat per file), unless its last change came too close before the recording for the mtime
to tell a later change apart; ``verify`` reads and hashes every input again.

Builders of one index take its writer lock (lock.py) around build and swap, so two
processes never build at once: the second waits, then reuses the first one's result.
Under the lock every build folder but the current one is a leftover (of a superseded
build, or of a builder that died) and is removed.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pcscope import __version__
from pcscope.core.collector import collector_paused
from pcscope.core.errors import InputError
from pcscope.core.inputs import Inputs, PathLike
from pcscope.core.profile import Profile
from pcscope.core.workload import Workload
from pcscope.index import arrays, manifest
from pcscope.index.lock import writer_lock
from pcscope.index.memory import return_free_memory
from pcscope.index.parts import PARTS, load_parts, save_alp_part, save_parts

# 2: a manifest of checked files, extra columns in numbered files; 3: mechanisms
# (mechanisms.msgpack) and code-shape-qualified patterns; 4: text index format 2 (samples,
# windows and modules answered from files beside it, not Tantivy fields); 5: copies of one
# loop, dispatch sequences and a C-library routine with its caller's loop are one
# mechanism each; 6: PLT mechanisms count the calls through stubs to C-library routines;
# 7: which mechanisms hold each PC is stored beside them (mechanisms.{pc,position,ids}.npy),
# and the windows' order by weight (profile/windows.by_weight.npy); 8: loops keeping state
# in memory (memory-state mechanisms), a PLT stub leading to a C-library routine belongs to
# the routine's mechanism only, stubs matched to other modules; dispatch mechanisms count
# the instructions merged into the opcode; byte-swap-store and store-loop mechanisms;
# 9: a memory-state mechanism names only byte stores as the alias forcing its reloads;
# 10: a per-operation tree admits functions entered up to 1 % more than k × operations and
# names its C allocator calls per operation
# 11: a C-library lookup mechanism names the caller making constant-key lookups per entry
# 12: a pointer-chase mechanism names the store by which its walk rewrites the structure
# 13: a pointer-chase mechanism carries its step's levers (first reject, recomputed values,
# the unrolled extension with its exit blocks in the site, the link width bounding its table);
# a memory-state mechanism names reloads with no store between and its byte stores per iteration;
# a mechanism in a function likely written in assembly says so (pcscope.core.hand_written)
# 14: per-operation trees from near-equal entry counts, member figures net of other mechanisms'
#     rows, key set-up and the constant-key lookups they make (linked to the lookup's
#     mechanism); lookup callers reached through tail calls; zeroing runs in small functions
# 15: gather-branch, struct-relaxation and fixed-trip-sum mechanisms (loops read through
#     their dataflow)
# 16: a memory-state mechanism lists the fields stored back on fewer than 90 % of its
#     iterations apart, with their part, and names its hottest aliasing byte store
# 17: a per-operation tree names its create/destroy pairs (members named one stem plus a
#     making and a releasing suffix, entered as often per operation)
# 18: a gather-branch mechanism names the branches that guard a loop, a call or a long path
#     (not a value choice) and counts its value-choice branches
# 19: the mechanisms are a part built on first use (``mechanisms/``, beside ``text/``), not
#     by the build: an index is browsable without them
# 20: a per-operation tree names the allocator's wrappers, the members calling its set-up,
#     pairs whose release returns at a null check, and its one-shot calls; a lookup names
#     its hit rate, the lookups one walk per entry deletes and all constant-key callers, and
#     only callers making 1 % of the calls
# 21: loop mechanisms carry the work their loop recomputes from rarely changing inputs
#     (pcscope.core.invariant_work, replacing the pointer chase's own check) and name the
#     mechanisms of the other loops of their nest (pcscope.core.loop_nests)
# 22: a memory-state missed CSE is summed over every path from the first load; a
#     gather-branch mechanism names three-way decisions (keys equal) and bucket scatters; a
#     pointer-chase mechanism names a link masked by a register (and its size from a constant)
# 23: a loop's recomputed work leaves out the rows of cycles nested in it (and values they
#     compute); a pointer-chase mechanism names an index wrapped by a register (its bound)
# 24: a gather-branch mechanism names each branch's role (short diamonds with their join,
#     loop exits, guards) and each loop by head with its inner cycles' counts
# 25: a per-operation tree names the functions outside it calling into it, with their modules
# 26: a gather-branch mechanism counts as keys only the loads its decisions and scatter
#     addresses read (other indexed loads apart) and names its bucket scatters' share
# 27: a per-operation tree splits the allocator's instructions between its create/destroy
#     pairs' members and the allocator calls starting outside them
# 28: a loop's recomputed work names the work a clamp against a constant (cmp #K + csel,
#     umin/smax #K) makes invariant once it saturates, and what still changes per iteration
# 29: recomputed and clamped work's checks list every instruction in address order; a
#     gather-branch mechanism counts its bucket scatters' keys and its loops' inner cycles
# 30: recomputed work's checks say which rows the loop's instructions per iteration count
# 31: a mechanism carries a per-operation tree's callers and allocator split as typed values
#     (its ``tree``), which the advice reads instead of parsing the checks back
# 32: loops: two heads of one cycle entered apart are one loop, nesting is body containment,
#     a jump back to an exit block is no loop; inner cycles found once (strongly connected)
# 33: each row's number among the distinct asm texts (asm_code.npy): texts are read once
# 34: a loop's entries are the runs of the edges coming into it from outside, read from exact
#     counts edge by edge (a jump into a row a branch of the loop also falls into counted);
#     FEAT_PAuth_LR returns (retaasppc…) are returns
# 35: mechanisms carry the categories of register spills, loop state in memory, string
#     routines, hardening, narrow accesses and loop overhead (were store-forwarding or other);
#     a pointer-chase mechanism names the second random access of each step (a load the link
#     of the same step addresses, with a base no link's address uses)
# 36: typed values the advice reads instead of parsing the checks back: a pointer chase's step
#     budget, relinking store, wrap bound, mask and prefetch (its ``chase``), a per-operation
#     tree's set-up, one-shot calls and pairs (in its ``tree``), a loop's fields kept in memory
#     (``memory``), a gather-branch loop's branches by role (``gather``), a lookup's
#     constant-key callers (``lookup``), a loop's recomputed and clamped work (``recomputed``)
# 37: a byte-swap-store mechanism owns the loop that does nothing but its stores (the loop's
#     other rows in its site, their count per word a metric)
# 38: a pointer chase's second access carries how far it reaches (the link's width, or the
#     register the walk leaves at), the loads beside it and two links read as one pair's halves
# 39: a dispatch mechanism names the fixed state its sites test (a value at a fixed address,
#     a frame field stored once per entry): metrics and checks; the opcode fetch nearest the
#     merge is kept (a flag read off a fixed base is no longer taken for the opcode)
# 40: an extension's byte compares include the one folded into its loop test (`cmp` then
#     `ccmp`), not only those before a branch of their own
# 41: a call changes the caller-saved registers its callee's code writes, all of them when
#     that code is not all in the profile (recomputed work, register setters); the recomputed
#     and the clamp's work counted together; a loop closed by an unconditional ``b`` taken on
#     all its runs (byte-loop trips)
# 42: a mechanism's typed values are one tuple of tagged values (``values``), no longer one
#     field per kind; new among them: a loop's nest, a PLT's stub targets, a struct
#     relaxation's loads, a fixed-trip loop's loops, a gather's loads and branches, a
#     lookup's further callers, a tree's listed members and callers, a chase's second access
# 43: an input's content fingerprint is its SHA-256 (BLAKE2b before: half the speed here)
# 44: a dispatch's fixed state (the hottest test of each kind, whether it is masked) is a
#     typed value the advice reads, not its checks
# 45: recomputed work carries where its inputs change and the stores blocking its hoisting
# 46: a chase carries its first reject and the paired adjacent-byte reject
# 47: a gather carries whether it partitions, its three-way decisions, scatters and loops
# 48: loop state in memory carries its reloads' PCs and the hottest aliasing byte store
# 49: a per-operation tree and a lookup its members call carry what each says of the other
# 50: a per-operation tree carries the callees it shares with another tree
# 51: a mechanism in a likely hand-written assembly function carries that as a value
# 52: a struct relaxation carries whether its table entry is added to a fixed base
# 53: a fixed-trip loop carries whether its bound is a register set before it
# 54: a table-driven CRC carries whether it is reflected
FORMAT_VERSION = 54
Progress = Callable[[str], None]


def default_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pcscope" / "index"


def index_key(inputs: Inputs) -> str:
    """One index folder per profile path and set of other inputs (content is checked apart)."""
    names = [str(p.resolve()) for _, p in inputs.files()]
    return hashlib.blake2b("\0".join(names).encode(), digest_size=8).hexdigest()


# A file changed this soon before its fingerprint was taken may change again without its
# mtime moving (timestamps are coarse: a clock tick, 2 s on FAT): its content is compared.
RACY_NS = 2_000_000_000


def fingerprint(path: Path) -> dict:
    st = _stat(path)
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "hash": _hash(path)}


def _stat(path: Path) -> os.stat_result:
    try:
        return path.stat()
    except FileNotFoundError:
        raise InputError(str(path), None, "no such file") from None


def _hash(path: Path) -> str:
    # SHA-256: CPUs hash it in hardware (x86 SHA-NI, Arm's SHA2 instructions), 1.1 GB/s here
    # against BLAKE2b's 0.5: every build hashes its inputs (~0.03 s less for a 17 MB profile)
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _meta(inputs: Inputs) -> dict:
    """What a build records of its inputs, and when the fingerprints were taken."""
    taken_ns = time.time_ns()
    return {
        "format": FORMAT_VERSION,
        "files": [[kind, fingerprint(p)] for kind, p in inputs.files()],
        "options": inputs.options(),
        "taken_ns": taken_ns,
    }


def _same(stored: dict, inputs: Inputs, verify: bool = False) -> bool:
    """Whether a stored meta.json is of these inputs: format, options, and every file of
    the same path, size and mtime, and of the same content when ``verify`` or when the
    mtime cannot vouch for it (changed too soon before the recording, or not recorded
    when: a meta.json of an earlier version)."""
    files = stored.get("files")
    if (stored.get("format") != FORMAT_VERSION or stored.get("options") != inputs.options()
            or not isinstance(files, list) or len(files) != len(inputs.files())):
        return False
    taken_ns = stored.get("taken_ns")
    trusted_before = taken_ns - RACY_NS if isinstance(taken_ns, int) else -1
    for (kind, path), recorded in zip(inputs.files(), files, strict=True):
        st = _stat(path)
        try:
            recorded_kind, fp = recorded
            if (recorded_kind != kind or fp["path"] != str(path.resolve())
                    or fp["size"] != st.st_size or fp["mtime_ns"] != st.st_mtime_ns):
                return False
            if (verify or st.st_mtime_ns >= trusted_before) and fp["hash"] != _hash(path):
                return False
        except (ValueError, KeyError, TypeError):  # not a meta.json this version wrote
            return False
    return True


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
        """Whether these inputs have a complete index that matches them (no build needed;
        damage is found when it is opened)."""
        inputs.check()
        stored = _stored_meta(self.home(inputs) / "current")
        return stored is not None and _same(stored, inputs)

    def try_open(self, inputs: Inputs, *, verify: bool = False) -> Workload | None:
        """The current, intact index of these inputs as memory maps, or None when it must
        be built (or rebuilt)."""
        inputs.check()
        return _reopen(self.home(inputs) / "current", inputs, verify, lambda _m: None)

    def open(self, inputs: Inputs, *, rebuild: bool = False, verify: bool = False,
             progress: Progress | None = None) -> Workload:
        """Reopen the index of these inputs, or build it (atomically) when missing, stale or
        damaged. ``verify``: compare every file's checksum, not only sizes and changed
        files."""
        inputs.check()
        home = self.home(inputs)
        current = home / "current"
        say = progress or (lambda _m: None)
        if not rebuild and (workload := _reopen(current, inputs, verify, say)) is not None:
            return workload
        meta = _meta(inputs)  # every input read: this build's record of them
        with writer_lock(home):
            # Another process may have built it while this one waited for the lock.
            if not rebuild and (workload := _reopen(current, inputs, verify, say)):
                return workload
            _remove_leftovers(home)
            _swap(home, _build(home, inputs, meta, say))
        try:
            return _load(current, inputs)
        except _DAMAGE as exc:
            raise InputError(str(current.resolve()), None, f"index damaged right after its "
                             f"build ({exc}): rerun with --rebuild") from None

    def latest_for(self, inputs: Inputs) -> Inputs | None:
        """The inputs of the newest current index of this profile with the same reader
        options (it may hold an ALP, guides, llvm-mca), or None."""
        profile = inputs.profile.resolve()
        found = []
        for meta_file in self.root.glob(f"*/current/{manifest.META}"):
            earlier = _inputs_of(_stored_meta(meta_file.parent) or {})
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
    verify: bool = False,
    progress: Progress | None = None,
    counts: str = "samples",
) -> Workload:
    """Open (building when needed) the index of these files: the library's short form of
    ``IndexStore.at(index_dir).open(Inputs.of(...))``."""
    inputs = Inputs.of(profile, alp=alp, guides=guides, mca=mca,
                       merge_duplicates=merge_duplicates, skip_bad_lines=skip_bad_lines,
                       counts=counts)
    return IndexStore.at(index_dir).open(inputs, rebuild=rebuild, verify=verify,
                                         progress=progress)


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
                  bool(options.get("merge_duplicates")), bool(options.get("skip_bad_lines")),
                  str(options.get("counts", "samples")))


# What loading a damaged build raises (np.load: ValueError; msgspec: DecodeError).
_DAMAGE = (OSError, ValueError, KeyError, TypeError, EOFError)


def _reopen(current: Path, inputs: Inputs, verify: bool, say: Progress) -> Workload | None:
    """The current build when it is of these inputs and intact (``verify``: every input
    and index file read and compared by content); None otherwise."""
    stored = _stored_meta(current)
    if stored is None or not _same(stored, inputs, verify):
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
        stored = json.loads((current / manifest.META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stored if isinstance(stored, dict) else None


def _build(home: Path, inputs: Inputs, meta: dict, say: Progress) -> Path:
    import tempfile  # only a build makes temporary folders: a reopen never loads it
    from concurrent.futures import ThreadPoolExecutor  # nor threads

    home.mkdir(parents=True, exist_ok=True)
    # Parsing needs polars; reopening does not, so its import waits until a build.
    from pcscope.core.readers.profile_csv import read_profile

    build = Path(tempfile.mkdtemp(prefix="build-", dir=home))
    try:
        # What a build makes lives to its end: automatic passes (three full ones at 1M rows,
        # ~0.2 s) would walk it and free nothing. What exists before it (the imports: most
        # of the process's objects) is frozen, so the one collection below skips it.
        with collector_paused():
            gc.freeze()
            try:
                say(f"reading {inputs.profile.name}")
                profile = read_profile(
                    inputs.profile, merge_duplicates=inputs.merge_duplicates, progress=say
                )
                return_free_memory()  # the parse's temporaries
                # The arrays are written (mostly system time, the GIL let go) while the
                # patterns are found. Leaving the block waits for the writer; its error
                # (a full disk) is raised by result() as it was raised.
                with ThreadPoolExecutor(1) as writer:
                    saved = writer.submit(_save_arrays, profile, build)
                    save_parts(build, profile, inputs, say)
                    written = saved.result()
                save_alp_part(build, profile, inputs, say)  # the writer thread has ended
                # Its window and function tables point back at it: only a collection frees
                # its arrays (~90 MB at 1M rows) before the reopen maps the saved ones.
                del profile
                gc.collect()
            finally:
                gc.unfreeze()
        return_free_memory()
        stamped = dict(meta, pcscope=__version__, manifest=manifest.manifest(build, written))
        (build / manifest.META).write_text(json.dumps(stamped, indent=1), encoding="utf-8")
    except OSError as exc:
        shutil.rmtree(build, ignore_errors=True)
        raise InputError(str(home), None, f"cannot write the index ({exc.strerror or exc}); "
                         "free some space or give another --index-dir") from None
    except BaseException:
        shutil.rmtree(build, ignore_errors=True)
        raise
    return build


def _save_arrays(profile: Profile, build: Path) -> dict[str, list[int]]:
    """The profile's arrays written into the build, and their manifest entries (paths from
    the build folder): checksummed here, beside the pattern pass, not after the build."""
    arrays.save_profile(profile, build / "profile")
    return {f"profile/{rel}": entry
            for rel, entry in manifest.manifest(build / "profile").items()}


def _swap(home: Path, build: Path) -> None:
    """Point ``current`` at ``build`` (atomically); under the writer lock."""
    tmp_link = home / f".current-{build.name}"
    os.symlink(build.name, tmp_link)
    os.replace(tmp_link, home / "current")
    _remove_leftovers(home)


def _remove_leftovers(home: Path) -> None:
    """Under the writer lock no build is in progress: every build folder but the current
    one, and any half-made link or part (text index, mechanisms), is left over. Readers of
    an older build keep their memory maps (unlinked files stay readable)."""
    live = (home / "current").resolve().name
    for stale in home.glob("build-*"):
        if stale.name != live:
            shutil.rmtree(stale, ignore_errors=True)
    parts = [p for name in PARTS for p in home.glob(f"build-*/.{name}-*")]
    for partial in [*home.glob(".current-*"), *parts]:
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
