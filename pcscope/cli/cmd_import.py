"""`pcscope import`: convert perf, objdump, Arm SPE, gem5 and llvm-mca output to native files."""

from __future__ import annotations

import argparse
import sys

from pcscope.cli.common import fraction, output_file, positive_float, positive_int

EPILOG = """\
inputs (see the README for the exact commands that make them):
  perf      perf script -F ip,sym,dso,period [+event,symoff]   (+ objdump -d of the DSOs)
  annotate  perf annotate --stdio [-n]
  spe       perf script -F event,time,cpu,ip,sym,dso,addr,data_src,weight,flags  (arm_spe)
  gem5      gem5 --debug-flags=O3PipeView --debug-file=trace.out …
  mca       a pcscope profile; runs the newest llvm-mca-NN on PATH on its hot windows
'-' reads standard input / writes standard output; names ending in .gz are gzip.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import",
        help="convert perf / objdump / Arm SPE / gem5 / llvm-mca output to native files",
        description="Convert what engineers already have into pcscope's native files: a "
        "profile CSV (perf, annotate) or raw ALP JSON Lines (spe, gem5), or llvm-mca "
        "evidence (mca).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = p.add_subparsers(dest="source", metavar="SOURCE", required=True)
    _perf(kinds)
    _annotate(kinds)
    _spe(kinds)
    _gem5(kinds)
    _mca(kinds)


def _output(p: argparse.ArgumentParser, what: str, example: str) -> None:
    p.add_argument("-o", "--output", default="-", metavar="FILE", type=output_file,
                   help=f"{what} to write (.gz: gzip; default '-': stdout), e.g. {example}")


def _perf(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("perf", help="perf script samples (+ objdump -d) -> profile CSV")
    p.add_argument("--script", required=True, metavar="FILE",
                   help="`perf script -F ip,sym,dso,period` text ('-' = stdin)")
    p.add_argument("--objdump", action="append", default=[], metavar="FILE",
                   help="`objdump -d` (GNU or llvm) of a sampled binary; repeat for several")
    p.add_argument("--base", action="append", default=[], metavar="DSO=ADDR",
                   help="load address of a shared object (else inferred from the samples)")
    p.add_argument("--event", metavar="NAME", help="the event to import when there are several")
    p.add_argument("--unweighted", action="store_true",
                   help="count sample lines instead of summing their period")
    _output(p, "profile CSV", "profile.csv.gz")
    p.set_defaults(func=run_perf)


def _annotate(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("annotate", help="perf annotate --stdio -> profile CSV")
    p.add_argument("file", metavar="FILE", help="`perf annotate --stdio [-n]` text ('-' = stdin)")
    p.add_argument("--base", action="append", default=[], metavar="DSO=ADDR",
                   help="relocate a DSO's file addresses to its run-time load address")
    p.add_argument("--event", metavar="NAME", help="the event to import when there are several")
    _output(p, "profile CSV", "profile.csv.gz")
    p.set_defaults(func=run_annotate)


def _spe(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("spe", help="Arm SPE perf script -> raw ALP (loop 'spe')")
    p.add_argument("file", metavar="FILE", help="`perf script` of an arm_spe recording "
                   "('-' = stdin)")
    _output(p, "raw ALP JSON Lines", "alp.jsonl.gz")
    p.set_defaults(func=run_spe)


def _gem5(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("gem5", help="gem5 O3PipeView trace -> raw ALP (loop 'gem5')")
    p.add_argument("trace", metavar="TRACE", help="O3PipeView debug output, plain or .gz "
                   "('-' = stdin)")
    p.add_argument("--ticks-per-cycle", type=positive_float, metavar="N",
                   help="ticks in one CPU cycle (default: the smallest tick step seen)")
    p.add_argument("--reorder-window", type=positive_int, default=4096, metavar="N",
                   help="how far (in sequence numbers) records may arrive out of order "
                   "(default 4096)")
    _output(p, "raw ALP JSON Lines", "alp.jsonl.gz")
    p.set_defaults(func=run_gem5)


def _mca(kinds: argparse._SubParsersAction) -> None:
    p = kinds.add_parser("mca", help="llvm-mca on a profile's hot windows -> mca evidence")
    p.add_argument("profile", metavar="PROFILE", help="profile CSV/TSV, plain or .gz")
    p.add_argument("--cpu", default="neoverse-n1", metavar="NAME",
                   help="llvm-mca -mcpu (default neoverse-n1)")
    p.add_argument("--top", type=positive_int, metavar="N", help="at most N hot windows")
    p.add_argument("--coverage", type=fraction, default=0.90, metavar="C",
                   help="hot windows until this share of the total (default 0.90)")
    p.add_argument("--iterations", type=positive_int, default=100, metavar="N",
                   help="llvm-mca -iterations (default 100)")
    p.add_argument("--llvm-mca", metavar="PATH",
                   help="the llvm-mca to run (default: the newest llvm-mca-NN on PATH)")
    p.add_argument("--merge-duplicates", action="store_true",
                   help="sum profile rows that repeat a PC instead of failing")
    p.add_argument("--timeout", type=positive_float, default=600.0, metavar="S",
                   help="seconds one llvm-mca run may take (default 600)")
    _output(p, "mca JSON Lines", "mca.jsonl.gz")
    p.set_defaults(func=run_mca)


def _say(text: str) -> None:
    print(f"pcscope import: {text}", file=sys.stderr)


def _warn(text: str | None) -> None:
    if text is not None:
        _say(f"warning: {text}")


def run_perf(args: argparse.Namespace) -> int:
    from pcscope.core.importers.common import write_profile
    from pcscope.core.importers.objdump import parse_objdump
    from pcscope.core.importers.perf import build_profile, describe, parse_bases, read_perf_script

    bases = parse_bases(args.base)
    disassemblies = [d for path in args.objdump for d in parse_objdump(path)]
    samples = read_perf_script(args.script, weighted=not args.unweighted)
    _warn(samples.skipped.summary("perf samples"))
    result = build_profile(samples.select(args.event), disassemblies, bases=bases,
                           mappings=samples.mappings, weighted=samples.weighted)
    sampled = {r.module for r in result.modules}
    for dis in disassemblies:
        if dis.module not in sampled:
            _say(f"warning: {dis.source}: no samples in {dis.module}")
    rows = write_profile(result.rows, args.output)
    for report in result.modules:
        _say(describe(report))
    basis = "period-weighted" if result.weighted else "sample counts"
    _say(f"{rows} rows ({basis}) -> {args.output}")
    return 0


def run_annotate(args: argparse.Namespace) -> int:
    from pcscope.core.importers.annotate import read_annotate
    from pcscope.core.importers.common import write_profile
    from pcscope.core.importers.perf import parse_bases

    result = read_annotate(args.file, event=args.event, bases=parse_bases(args.base))
    rows = write_profile(result.rows, args.output)
    _say(f"{result.symbols} symbols, {rows} rows -> {args.output}")
    return 0


def run_spe(args: argparse.Namespace) -> int:
    from pcscope.core.importers.common import write_jsonl
    from pcscope.core.importers.spe import read_spe

    result = read_spe(args.file)
    _warn(result.skipped.summary("Arm SPE samples"))
    records = write_jsonl(result.records, args.output)
    _say(f"{result.samples} samples = {result.spe_records} SPE records at {records} PCs "
         f"-> {args.output}")
    return 0


def run_gem5(args: argparse.Namespace) -> int:
    from pcscope.core.importers.common import write_jsonl
    from pcscope.core.importers.gem5 import read_gem5

    result = read_gem5(args.trace, ticks_per_cycle=args.ticks_per_cycle,
                       window=args.reorder_window)
    records = write_jsonl(result.records, args.output)
    how = "inferred" if result.inferred else "given"
    _say(f"{result.micro_ops} records, {result.instructions} instructions: "
         f"{result.committed} committed, {result.squashed} squashed; "
         f"{result.ticks_per_cycle:g} ticks/cycle ({how}); {records} PCs -> {args.output}")
    if result.late:
        _say(f"warning: {result.late} records arrived more than --reorder-window records late")
    if result.incomplete is not None:
        _say(f"warning: the trace ends inside the record at line {result.incomplete} "
             "(ignored)")
    return 0


def run_mca(args: argparse.Namespace) -> int:
    from pcscope.core.importers.common import write_jsonl
    from pcscope.core.importers.mca import analyse_profile, find_llvm_mca, tool_at
    from pcscope.core.readers.profile_csv import read_profile

    tool = tool_at(args.llvm_mca, args.timeout) if args.llvm_mca else find_llvm_mca()
    if tool is None:
        _say("llvm-mca is not installed (e.g. `apt-get install llvm-19`): no static "
             "evidence written; everything else works without it")
        return 0
    profile = read_profile(args.profile, merge_duplicates=args.merge_duplicates)
    result = analyse_profile(profile, tool, cpu=args.cpu, iterations=args.iterations,
                             top=args.top, coverage=args.coverage, timeout=args.timeout)
    for note in result.notes:
        _say(f"warning: {note}")
    records = write_jsonl(result.records, args.output)
    _say(f"{tool.label}, -mcpu={args.cpu}: {result.windows} hot windows, "
         f"{result.modelled} instructions modelled, {result.skipped} left out; "
         f"{records} records (predicted) -> {args.output}")
    return 0
