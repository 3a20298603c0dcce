"""Test data found one way: the real programs of the shared corpus, located beside the
repository (``<repo>/../shared/corpus/real``) and skipped with a reason when absent, the
samples and guides bundled with pcscope, and the explorer tests' index."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from pcscope.samples import BundledSample, bundled, guides

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "real"


@dataclass(frozen=True)
class RealProgram:
    """One program of the corpus: profile.csv.gz, facts.json (figures computed apart)."""

    name: str
    folder: Path

    @property
    def profile(self) -> Path:
        return self.folder / "profile.csv.gz"

    def facts(self) -> dict:
        return json.loads((self.folder / "facts.json").read_text(encoding="utf-8"))


def real_program(name: str) -> RealProgram:
    """The corpus program ``name``, or a skip saying where it was looked for."""
    folder = CORPUS / name
    if not (folder / "profile.csv.gz").is_file():
        pytest.skip(f"shared corpus program {name!r} not found at {folder}")
    return RealProgram(name, folder)


def real_programs() -> list[str]:
    """Names of the corpus programs present (empty when the corpus is absent)."""
    if not CORPUS.is_dir():
        return []
    return sorted(p.name for p in CORPUS.iterdir() if (p / "profile.csv.gz").is_file())


@pytest.fixture(scope="session")
def bzip2() -> RealProgram:
    return real_program("bzip2")


@pytest.fixture(scope="session")
def sample_c() -> BundledSample:
    """The default bundled sample (kind C): profile, raw ALP, truth and the guides."""
    return bundled("C")


@pytest.fixture(scope="session")
def planted_sample() -> BundledSample:
    """The small bundled sample with every issue category planted once."""
    return bundled("planted")


@pytest.fixture(scope="session")
def bundled_guides() -> list[Path]:
    return guides()


@pytest.fixture(scope="session")
def tui_index(tmp_path_factory):
    """The explorer tests' fixed inputs (tui_data), indexed once for the whole run.

    Tests only read it: a reopen adds just what any open adds on first use (the text
    index, the mechanisms), and other inputs (``indexed.app(guides=…)``) get an index of
    their own beside it. A test that changes the inputs or the index files builds its own
    (``tui_support.build_index``)."""
    from tui_support import build_index

    return build_index(tmp_path_factory.mktemp("tui-index"))


@pytest.fixture
def indexed(tui_index, tmp_path):
    """The shared index with a session store of this test's own: no state leaks from one
    test into the next."""
    from tui_support import fresh_session

    return fresh_session(tui_index, tmp_path)
