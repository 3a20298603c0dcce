"""Files shipped inside the pcscope package (samples, guides, presets, settings, themes),
found one way: through importlib.resources, which follows the package wherever it is
installed rather than guessing from a module's ``__file__``."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def bundled_path(package: str, *parts: str) -> Path:
    """A file or folder shipped in ``package`` (pcscope installs as plain files, so this is
    a real path that can be memory-mapped or globbed)."""
    return Path(str(resources.files(package).joinpath(*parts)))
