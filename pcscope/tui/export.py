"""Triage that leaves the terminal: the run's report with the engineer's verdicts and
notes, or the current view (hot list, a window's annotated assembly) without any analysis.

The file is written in a worker thread; the bottom line asks for the path. A name ending
in ``.json`` gets the JSON report (docs/formats.md §4, triaged), anything else Markdown.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from pcscope.tui.work import in_thread

if TYPE_CHECKING:
    from pcscope.tui.screens.main import MainScreen


def export_report(screen: MainScreen) -> None:
    """The shown run's report with the triage; without a run, the current view."""
    run = screen.analysis.run_id
    if run is None:
        export_view(screen)
        return
    verdicts = dict(screen.findings.ideas.verdicts)
    stem = screen.request.profile.name.split(".")[0]

    def write(path: str) -> str:
        from pcscope.core.engine.report import markdown_report
        from pcscope.core.engine.session_store import SessionStore
        from pcscope.core.textio import open_output
        from pcscope.core.triage import triage_markdown, triaged_report

        with SessionStore(screen.session.path) as store:
            report = store.report(run)
        if report is None:
            raise RuntimeError(f"run r{run} has no report (it did not finish)")
        triaged = triaged_report(report, verdicts)
        with open_output(path) as out:
            if path.endswith(".json"):
                out.write(json.dumps(triaged, indent=2) + "\n")
            else:
                out.write(markdown_report(triaged, screen.workload))
                out.write("\n" + "\n".join(triage_markdown(triaged)))
        return path

    _ask(screen, f"export run r{run} (.md or .json) to", f"{stem}-pcscope.md", write)


def export_view(screen: MainScreen) -> None:
    """The hot windows as listed (hot pane), else the open window's annotated assembly."""
    from pcscope.core.views import assembly_markdown, hot_windows_markdown

    profile = screen.workload.profile
    stem = screen.request.profile.name.split(".")[0]
    if screen.active == "hot" or screen.asm.window is None:
        model = screen.hot.model
        windows = [model.window_at(i) for i in range(len(model))]
        title = f"Hot windows ({model.view.describe()})"

        def render() -> str:
            return hot_windows_markdown(profile, windows, title)

        default = f"{stem}-hot.md"
    else:
        win = profile.windows[screen.asm.window]
        name = profile.function_names[win.function] if win.function >= 0 else "(no function)"

        def render() -> str:
            return assembly_markdown(profile, list(profile.window_rows(win.index)),
                                     f"{name} · {win.id}")

        default = f"{stem}-{win.id.replace(':', '-')}.md"

    def write(path: str) -> str:
        from pcscope.core.textio import open_output

        with open_output(path) as out:
            out.write(render())
        return path

    _ask(screen, "export this view (Markdown) to", default, write)


def _ask(screen: MainScreen, prompt: str, default: str, write) -> None:
    def chosen(path: str | None) -> None:
        if path:
            in_thread(screen, lambda: _written(screen, write(path)), name="export",
                      group="export")

    screen.command.ask(prompt, chosen, value=default)


def _written(screen: MainScreen, path: str) -> str:
    screen.app.call_from_thread(screen.notify, f"written to {path}")
    return path
