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
from typing import TYPE_CHECKING, Any

from pcscope.core.inputs import Inputs
from pcscope.core.workload import Workload
from pcscope.tui.session import Restored, UiSession

if TYPE_CHECKING:
    from pcscope.index.store import IndexStore


@dataclass(frozen=True)
class OpenRequest:
    inputs: Inputs  # built by the CLI (`pcscope open`), guides and reuse already chosen
    index_dir: Path | None = None
    model: str = "offline"
    preset: str = "standard"
    session: Path | None = None  # default: the engine's per-profile store beside the index
    rebuild: bool = False
    verify: bool = False
    fresh: bool = False  # a damaged session store is moved aside, a new one started

    @property
    def store(self) -> IndexStore:
        from pcscope.index.store import IndexStore

        return IndexStore.at(self.index_dir)


@dataclass
class Prepared:
    workload: Workload
    settings: Any  # the engine's Settings for this preset
    session: UiSession
    restored: Restored


def prepare(request: OpenRequest, progress: Callable[[str], None]) -> Prepared:
    """Open (or build) the index, then everything else the explorer starts with."""
    prepared = _with_session(request, lambda: request.store.open(
        request.inputs, rebuild=request.rebuild, verify=request.verify, progress=progress))
    assert prepared is not None  # open builds what it cannot reopen
    return prepared


def reopen(request: OpenRequest) -> Prepared | None:
    """``prepare`` if the index is current; None when it must be built (the indexing
    screen then builds it with a progress display)."""
    if request.rebuild:
        return None
    return _with_session(request, lambda: request.store.try_open(request.inputs,
                                                                 verify=request.verify))


def _with_session(request: OpenRequest,
                  open_workload: Callable[[], Workload | None]) -> Prepared | None:
    """The workload from ``open_workload`` (None: nothing to explore yet), opened while the
    session store restores on its own thread: SQLite waits on the disk (a new store's
    schema is written and synced) without holding the GIL, so the two overlap."""
    from pcscope.core.engine.presets import load_preset

    session = (UiSession(request.session, fresh=request.fresh) if request.session
               else UiSession.for_profile(request.store.root, request.inputs.profile,
                                          request.fresh))
    restoring = session.load_later()
    try:
        workload = open_workload()
    except BaseException:
        session.close()
        raise
    if workload is None:
        session.close()
        return None
    return Prepared(workload, load_preset(request.preset), session, restoring.result())
