"""`pcscope calls PROFILE` lists the recorded calls of a run; `pcscope call ID` shows one."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from pcscope.cli.common import positive_int, print_json
from pcscope.core.engine.calls import CallRecord
from pcscope.core.engine.session_store import SessionStore, default_path
from pcscope.core.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "calls", help="list the recorded calls of an analysis run",
        description="List the bounded calls recorded for PROFILE by `pcscope analyze` "
        "(default: its latest run): wave, parent, status, findings accepted and rejected, "
        "tokens and seconds.")
    p.add_argument("profile", metavar="PROFILE", help="the profile that was analysed")
    _store_args(p)
    p.add_argument("--runs", action="store_true", help="list the runs instead")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run_calls)

    q = sub.add_parser(
        "call", help="show one recorded call: given and fetched IDs, tools, output, verdict",
        description="Show one recorded call: the evidence IDs it was given, every tool request "
        "and the IDs it returned, the raw output, and the verdict on each finding. Without "
        "PROFILE every session store under the index directory is searched.")
    q.add_argument("call", metavar="ID", help="call ID, e.g. w1.c3")
    q.add_argument("profile", metavar="PROFILE", nargs="?", help="the profile analysed")
    _store_args(q)
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=run_call)


def _store_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", type=positive_int, metavar="N", help="run number (default: latest)")
    p.add_argument("--session", metavar="FILE", help="session store file")
    p.add_argument("--index-dir", metavar="DIR",
                   help="where indexes and sessions live (default: $XDG_CACHE_HOME/pcscope/index)")


def _root(args: argparse.Namespace) -> Path:
    from pcscope.index.store import default_root

    return Path(args.index_dir) if args.index_dir else default_root()


def _stores(args: argparse.Namespace) -> list[Path]:
    if args.session:
        return [Path(args.session)]
    if args.profile:
        return [default_path(_root(args), args.profile)]
    folder = _root(args) / "sessions"
    found = sorted(folder.glob("*.sqlite"), key=lambda p: p.stat().st_mtime, reverse=True)
    if not found:
        raise UsageError(f"no recorded analyses under {folder}")
    return found


def _open(path: Path) -> SessionStore:
    if not path.is_file():
        raise UsageError(f"no analysis recorded for this profile ({path} does not exist)")
    return SessionStore(path)


def run_calls(args: argparse.Namespace) -> int:
    with _open(_stores(args)[0]) as store:
        runs = store.runs()
        if not runs:
            raise UsageError("no analysis runs recorded")
        if args.runs:
            rows = [{"run": r.id, "model": r.model, "status": r.status,
                     "stop_reason": r.stop_reason, "calls": r.calls,
                     "preset": r.settings.get("preset")} for r in runs]
            if args.json:
                print_json(rows)
            else:
                for r in rows:
                    print(f"run {r['run']:>3}  {r['status']:<9} {r['stop_reason'] or '':<12} "
                          f"{r['calls']:>4} calls  {r['model']}  preset {r['preset']}")
            return 0
        run = args.run or runs[-1].id
        calls = store.calls(run)
    if args.json:
        print_json({"run": run, "calls": [_summary(c) for c in calls]})
        return 0
    print(f"run {run}: {len(calls)} calls")
    for c in calls:
        print(f"{c.id:<10} w{c.wave} {c.parent or '-':<9} {c.status:<9} "
              f"+{len(c.accepted)} -{len(c.rejections)}  {c.input_tokens:>7,} in "
              f"{c.output_tokens:>6,} out {c.seconds:6.2f} s  {c.title}")
    return 0


def _summary(c: CallRecord) -> dict:
    return {**c.summary(), "title": c.title, "accepted": c.accepted,
            "rejected": len(c.rejections)}


MAX_CALL_ID = 64  # characters; call IDs are short (w1.c3, review.w2)


def run_call(args: argparse.Namespace) -> int:
    if len(args.call) > MAX_CALL_ID:
        raise UsageError(f"call ID longer than {MAX_CALL_ID} characters (IDs look like w1.c3)")
    for path in _stores(args):
        if not path.is_file():
            continue
        with SessionStore(path) as store:
            record = store.call(args.call, args.run)
        if record is not None:
            return _show(record, args.json)
    raise UsageError(f"no recorded call {args.call}")


def _show(c: CallRecord, as_json: bool) -> int:
    if as_json:
        print_json(asdict(c))
        return 0
    print(f"call {c.id} (run {c.run}, wave {c.wave}, parent {c.parent or '-'}): {c.title}")
    print(f"model {c.model}  status {c.status}  {c.input_tokens:,} in / {c.output_tokens:,} "
          f"out / {c.cached_tokens:,} cached tokens  {c.seconds:.2f} s")
    if c.error:
        print(f"error: {c.error}")
    print(f"\ngiven ({len(c.given)}): {' '.join(c.given)}")
    print(f"fetched ({len(c.fetched)}): {' '.join(c.fetched) or '-'}")
    print(f"\ntools ({len(c.tools)}):")
    for t in c.tools:
        outcome = f"error: {t.error}" if t.error else f"{len(t.ids)} IDs"
        print(f"  {t.tool} {t.input} -> {outcome}")
    print("\nverdict:")
    for fid in c.accepted:
        print(f"  accepted {fid}")
    for r in c.rejections:
        print(f"  rejected {r.get('title') or '(whole output)'}: {r['reason']}")
    print(f"\nraw output:\n{c.raw or '-'}")
    return 0
