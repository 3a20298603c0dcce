"""The summaries that reports and `--json` outputs share (formats.md §4 and §5)."""

from __future__ import annotations

from pcscope.core.profile import HotSelection, Profile
from pcscope.core.workload import Workload


def profile_summary(profile: Profile, selection: HotSelection) -> dict:
    """The report's ``profile`` object."""
    return {
        "path": profile.path,
        "instructions": len(profile),
        "windows": len(profile.windows),
        "functions": len(profile.functions),
        "total": profile.total,
        "basis": profile.basis,
        "selected_windows": len(selection.windows),
        "coverage": round(selection.coverage, 6),
    }


def function_label(profile: Profile, function: int) -> str:
    return profile.function_names[function] if function >= 0 else ""


def top_windows(profile: Profile, selection: HotSelection) -> list[dict]:
    out = []
    for w in selection.windows:
        win = profile.windows[w]
        rows = profile.window_rows(w)
        out.append({
            "id": win.id,
            "function": function_label(profile, win.function),
            "weight": round(win.weight, 6),
            "instructions": win.n,
            "samples": int(profile.samples[rows].sum()),
            "first_pc": f"0x{win.first_pc:x}",
            "last_pc": f"0x{win.last_pc:x}",
            "module": profile.modules[win.module] if win.module >= 0 else "",
        })
    return out


def index_summary(workload: Workload, selection: HotSelection) -> dict:
    """`pcscope index --json`: the profile object plus hot windows, patterns and ALP stats."""
    profile = workload.profile
    out = profile_summary(profile, selection)
    out["top_windows"] = top_windows(profile, selection)
    out["patterns"] = workload.patterns.counts()
    if workload.alp is not None:
        stats = workload.alp.trimmed(selection.pcs(profile).tolist()).stats
        out["alp"] = {k: getattr(stats, k) for k in
                      ("records", "pcs", "unmatched", "raw_tokens", "trimmed_tokens",
                       "skipped_lines")}
    return out
