"""Design invariant: core/ and index/ import neither textual nor pcscope.tui."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pcscope


def _modules(prefix: str) -> list[str]:
    pkg = __import__(prefix, fromlist=["_"])
    return [prefix] + [m.name for m in pkgutil.walk_packages(pkg.__path__, prefix + ".")]


def test_core_and_index_never_import_textual():
    names = _modules("pcscope.core") + _modules("pcscope.index")
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.')"
        " or m.startswith('pcscope.tui'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=pcscope.__path__[0] + "/..")
    assert out.stdout.strip() == "", f"imported: {out.stdout.strip()}"
    assert len(names) > 5
