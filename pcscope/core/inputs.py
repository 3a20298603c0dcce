"""The files one workload is made of, as one value from the command line to the index.

The CLI builds an ``Inputs`` once; the index store keys, fingerprints and builds from it,
and the explorer opens it. Reader options belong here too: they change what is indexed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pcscope.core.errors import InputError

PathLike = str | os.PathLike[str]
COUNTS = ("samples", "executions")  # docs/formats.md §1: what the `samples` column holds


@dataclass(frozen=True)
class Inputs:
    profile: Path
    alp: Path | None = None
    guides: tuple[Path, ...] = ()
    mca: Path | None = None
    merge_duplicates: bool = False
    skip_bad_lines: bool = False
    counts: str = "samples"  # what the `samples` column holds: samples or executions

    @classmethod
    def of(cls, profile: PathLike, *, alp: PathLike | None = None,
           guides: Sequence[PathLike] = (), mca: PathLike | None = None,
           merge_duplicates: bool = False, skip_bad_lines: bool = False,
           counts: str = "samples") -> Inputs:
        return cls(Path(profile), Path(alp) if alp else None, tuple(Path(g) for g in guides),
                   Path(mca) if mca else None, merge_duplicates, skip_bad_lines, counts)

    def files(self) -> list[tuple[str, Path]]:
        """(kind, path) of every input file, the profile first."""
        out = [("profile", self.profile)]
        if self.alp:
            out.append(("alp", self.alp))
        out += [("guide", g) for g in self.guides]
        if self.mca:
            out.append(("mca", self.mca))
        return out

    def options(self) -> dict[str, bool | str]:
        return {"merge_duplicates": self.merge_duplicates, "skip_bad_lines": self.skip_bad_lines,
                "counts": self.counts}

    def only_profile(self) -> bool:
        """Given nothing but the profile (and reader options): an earlier index of the same
        profile, with its ALP and guides, may serve."""
        return self.alp is None and not self.guides and self.mca is None

    def check(self) -> None:
        """A missing input (or unknown count basis) fails as one line, before any work."""
        if self.counts not in COUNTS:
            raise InputError(str(self.profile), None, f"unknown counts {self.counts!r} (want "
                             f"{' or '.join(COUNTS)})")
        for _, path in self.files():
            if not path.is_file():
                raise InputError(str(path), None, "no such file" if not path.exists() else
                                 "is a directory, not a file" if path.is_dir() else
                                 "not a regular file")

    def describe(self) -> str:
        """The inputs as command-line options (for 'which index was used')."""
        parts = [str(self.profile)]
        if self.alp:
            parts.append(f"--alp {self.alp}")
        parts += [f"--guide {g}" for g in self.guides]
        if self.mca:
            parts.append(f"--mca {self.mca}")
        parts += [f"--{k.replace('_', '-')}" for k, v in self.options().items() if v is True]
        if self.counts != "samples":
            parts.append(f"--counts {self.counts}")
        return " ".join(parts)
