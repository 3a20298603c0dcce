"""Every file of the index of some profiles, to compare one version of the build with another.

    python -m bench.index_identity build OUT [PROFILE...]   # default: 1M bench + real corpus
    python -m bench.index_identity compare OLD NEW

``build`` indexes each profile from nothing into ``OUT/<profile's folder name>``, with its
mechanisms (the part built on first use; the text index is not compared: Tantivy's segment
files are not byte-stable);
``compare`` checks that every file of each index is byte-identical, meta.json included
but for what differs between two builds of the same inputs (when the build and its
fingerprints were taken, the files' mtimes, the index folder's path). A change to the build
meant to be output-identical must compare clean.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
META = "meta.json"
DONE = "/done.json"


def default_profiles() -> list[Path]:
    real = sorted((ROOT.parent / "shared" / "corpus" / "real").glob("*/profile.csv.gz"))
    return [ROOT / "bench" / "out" / "big" / "profile.csv.gz", *real]


def build(out: Path, profiles: list[Path]) -> None:
    from pcscope.index.store import open_workload

    for profile in profiles:
        open_workload(profile, index_dir=out / profile.parent.name, rebuild=True).mechanisms  # noqa: B018
        print(f"built {profile}", flush=True)


def _builds(out: Path) -> dict[str, Path]:
    """Each profile's current build folder under ``out``."""
    return {p.parents[1].name: p.resolve() for p in out.glob("*/*/current")}


def _stable_meta(path: Path) -> dict:
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta.pop("taken_ns", None)
    meta["manifest"] = {rel: [size, crc] for rel, (size, _mtime, crc)
                        in meta.get("manifest", {}).items()}
    for _kind, fp in meta.get("files", []):
        fp.pop("mtime_ns", None)
    return meta


def _stable_manifest(path: Path) -> dict:
    return {rel: [size, crc] for rel, (size, _mtime, crc)
            in json.loads(path.read_text(encoding="utf-8")).items()}


def _files(folder: Path) -> dict[str, Path]:
    return {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}


def compare(old: Path, new: Path) -> list[str]:
    """What differs between the indexes under two folders (nothing: identical)."""
    problems = []
    old_builds, new_builds = _builds(old), _builds(new)
    if old_builds.keys() != new_builds.keys():
        return [f"different profiles: {sorted(old_builds)} vs {sorted(new_builds)}"]
    for name in sorted(old_builds):
        a, b = _files(old_builds[name]), _files(new_builds[name])
        if a.keys() != b.keys():
            problems.append(f"{name}: files differ: {sorted(a.keys() ^ b.keys())}")
            continue
        same = 0
        for rel in sorted(a):
            if rel == META:
                equal = _stable_meta(a[rel]) == _stable_meta(b[rel])
            elif rel.endswith(DONE):  # a part's manifest: its files' mtimes differ
                equal = _stable_manifest(a[rel]) == _stable_manifest(b[rel])
            else:
                equal = a[rel].read_bytes() == b[rel].read_bytes()
            if equal:
                same += 1
            else:
                problems.append(f"{name}: {rel} differs")
        print(f"{name}: {same} of {len(a)} files identical")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "build":
        build(Path(argv[1]), [Path(a) for a in argv[2:]] or default_profiles())
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        problems = compare(Path(argv[1]), Path(argv[2]))
        for problem in problems:
            print(problem)
        print("identical" if not problems else f"{len(problems)} differences")
        return 1 if problems else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
