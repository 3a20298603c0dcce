"""Design invariants of the import graph.

Static (every import statement, including those inside functions and under
TYPE_CHECKING): the core never imports the explorer, its themes, the index, the CLI or the
samples; the index never imports the explorer or the CLI; the samples never import the CLI
or the explorer; the backends reach the engine only through the contract, which imports
neither. Dynamic: importing every core and index module loads no Textual.
"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pcscope

PACKAGE = Path(pcscope.__path__[0])

# (importer prefix, forbidden prefixes, why)
RULES = [
    ("pcscope.core", ("textual", "pcscope.tui", "pcscope.themes"), "the core has no UI"),
    ("pcscope.core", ("pcscope.index",), "the index provides core.queries.Queries"),
    ("pcscope.core", ("pcscope.cli", "pcscope.samples"), "the core is below them"),
    ("pcscope.index", ("textual", "pcscope.tui", "pcscope.themes", "pcscope.cli"),
     "the index is below the UI and the CLI"),
    ("pcscope.samples", ("pcscope.cli", "pcscope.tui", "textual"),
     "the generator's command line lives in cli/cmd_sample.py"),
    ("pcscope.core.backends", ("pcscope.core.engine",),
     "backends see the engine only through pcscope.core.contract"),
    ("pcscope.core.contract", ("pcscope.core.engine", "pcscope.core.backends"),
     "the contract is what both sides import"),
]

def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, name: str | None = None) -> set[str]:
    """Every module an import statement of this file names (``from a import b`` gives
    ``a`` and ``a.b``: b may be a module)."""
    name = name or _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def graph() -> dict[str, set[str]]:
    return {_module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


def violations(modules: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, imported in modules.items():
        for importer, forbidden, why in RULES:
            if not _within(module, importer):
                continue
            for target in sorted(imported):
                if any(_within(target, f) for f in forbidden):
                    bad.append(f"{module} imports {target} ({why})")
    return bad


def test_layers_are_kept():
    modules = graph()
    assert len(modules) > 100 and "pcscope.core.contract.backend" in modules
    assert violations(modules) == []


def test_the_checker_sees_lazy_relative_and_type_checking_imports(tmp_path):
    """The rules can fail: an import inside a function or under TYPE_CHECKING counts."""
    fake = {
        "pcscope.core.x": {"pcscope.index.query"},
        "pcscope.core.backends.y": {"pcscope.core.engine.tools", "pcscope.core.contract"},
        "pcscope.samples.z": {"pcscope.cli.common"},
        "pcscope.core.contract.w": {"pcscope.core.backends.registry"},
        "pcscope.core.engine.v": {"pcscope.core.contract.findings"},
    }
    assert [b.split(" (")[0] for b in violations(fake)] == [
        "pcscope.core.x imports pcscope.index.query",
        "pcscope.core.backends.y imports pcscope.core.engine.tools",
        "pcscope.samples.z imports pcscope.cli.common",
        "pcscope.core.contract.w imports pcscope.core.backends.registry",
    ]
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from pcscope.index import store\n"
                      "def f():\n    import pcscope.tui.app\n    from ..engine import tools\n")
    assert {"pcscope.index.store", "pcscope.tui.app", "pcscope.core.engine.tools"} \
        <= imports_of(source, "pcscope.core.backends.m")


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
        " or m.startswith('pcscope.tui') or m.startswith('pcscope.themes'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=pcscope.__path__[0] + "/..")
    assert out.stdout.strip() == "", f"imported: {out.stdout.strip()}"
    assert len(names) > 5
