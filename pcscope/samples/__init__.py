"""Bundled sample workloads (profile, raw ALP, ground truth) and the guides shipped with them.

``bundled("C")`` names the files of one committed sample; ``pcscope.samples.generate``
makes new ones (its command line is ``pcscope sample``, in pcscope.cli).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pcscope.core.errors import UsageError

HERE = Path(__file__).parent
DATA = HERE / "data"
GUIDES = HERE / "guides"
NAMES = ("A", "B", "C", "planted")


@dataclass(frozen=True)
class BundledSample:
    profile: Path
    alp: Path
    truth: Path
    guides: list[Path]


def bundled(name: str = "C") -> BundledSample:
    """The committed sample `name` (A, B, C or planted) and the bundled guides."""
    if name not in NAMES:
        raise UsageError(f"no bundled sample {name!r} (have: {', '.join(NAMES)})")
    folder = DATA / name
    return BundledSample(folder / "profile.csv.gz", folder / "alp.jsonl.gz",
                         folder / "truth.json", guides())


def guides() -> list[Path]:
    """The bundled guides (Markdown), sorted; the folder's README describes them and is not one."""
    if not GUIDES.is_dir():
        return []
    return sorted(p for p in GUIDES.glob("*.md") if p.name.lower() != "readme.md")
