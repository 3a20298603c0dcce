"""What the explorer was asked to open, and everything loaded for it before the first frame.

``prepare`` reopens (or builds) the index, reads the analysis preset and restores the
per-profile session. A current index reopens in a fraction of a second: ``reopen`` does
that before the UI starts, so the first frame is already the explorer. An index that
must be built is left to the indexing screen, whose worker thread runs ``prepare`` with
a progress display.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcscope.core.workload import Workload
from pcscope.tui.session import Restored, UiSession


@dataclass(frozen=True)
class OpenRequest:
    profile: Path
    alp: Path | None = None
    guides: tuple[Path, ...] = ()
    index_dir: Path | None = None
    model: str = "offline"
    preset: str = "standard"
    session: Path | None = None  # default: the engine's per-profile store beside the index
    merge_duplicates: bool = False
    skip_bad_lines: bool = False
    rebuild: bool = False
    verify: bool = False
    fresh: bool = False  # a damaged session store is moved aside, a new one started

    @property
    def index_root(self) -> Path:
        from pcscope.index.store import default_root

        return self.index_dir or default_root()


@dataclass
class Prepared:
    workload: Workload
    settings: Any  # the engine's Settings for this preset
    session: UiSession
    restored: Restored


def prepare(request: OpenRequest, progress: Callable[[str], None]) -> Prepared:
    from pcscope.core.engine.presets import load_preset
    from pcscope.index.store import open_workload

    settings = load_preset(request.preset)
    workload = open_workload(
        request.profile,
        alp=request.alp,
        guides=request.guides or default_guides(settings),
        index_dir=request.index_dir,
        merge_duplicates=request.merge_duplicates,
        skip_bad_lines=request.skip_bad_lines,
        rebuild=request.rebuild,
        verify=request.verify,
        progress=progress,
    )
    session = (UiSession(request.session, fresh=request.fresh) if request.session
               else UiSession.for_profile(request.index_root, request.profile, request.fresh))
    return Prepared(workload, settings, session, session.load())


class _NeedsBuild(Exception):
    """The index builder reported progress: there is no current index to reopen."""


def _refuse(_step: str) -> None:
    raise _NeedsBuild


def reopen(request: OpenRequest) -> Prepared | None:
    """``prepare`` if the index is current; None when it must be built (the builder's
    first progress report stops it before any work, and it cleans up after itself)."""
    if request.rebuild:
        return None
    try:
        return prepare(request, _refuse)
    except _NeedsBuild:
        return None


def default_guides(settings) -> tuple[Path, ...]:
    """No --guide: the preset's guides, else the bundled ones (as `pcscope analyze` does,
    so both commands share one index)."""
    if settings.guides:
        return tuple(Path(g) for g in settings.guides)
    folder = Path(__file__).resolve().parent.parent / "samples" / "guides"
    return tuple(sorted(p for p in folder.glob("*.md") if p.name != "README.md"))
