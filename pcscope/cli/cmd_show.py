"""`pcscope show`: the assembly around one PC with samples, patterns and its ALP record."""

from __future__ import annotations

import argparse

from pcscope.cli.common import add_input_args, load_workload, print_json
from pcscope.core.errors import UsageError
from pcscope.core.evidence import EvidenceStore
from pcscope.core.ids import hex_pc, parse_pc
from pcscope.core.mechanisms import describe


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "show",
        help="assembly around a PC with samples, patterns and ALP",
        description="Print the instructions around PC (address order, same module) with "
        "their samples and share of the total, the pattern hits at each, and the "
        "aggregated ALP record of PC when an ALP was given.",
    )
    add_input_args(p)
    p.add_argument("pc", metavar="PC",
                   help="instruction address, 0x-hex or decimal, or a mechanism ID "
                   "(mech:<kind>:0x…: its sites, metrics and checks, then its anchor)")
    p.add_argument("--before", type=int, default=8, metavar="N", help="instructions before")
    p.add_argument("--after", type=int, default=8, metavar="N", help="instructions after")
    p.add_argument("--json", action="store_true", help="machine-readable output (docs/formats.md §5)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.before < 0 or args.after < 0:
        raise UsageError("--before and --after must not be negative")
    mechanism_id = args.pc if args.pc.startswith("mech:") else None
    if mechanism_id is None:
        try:
            pc = parse_pc(args.pc)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    workload = load_workload(args)
    store = EvidenceStore(workload)
    if mechanism_id is not None:
        mechanism = workload.mechanisms.get(mechanism_id)
        if mechanism is None:
            raise UsageError(f"no mechanism {mechanism_id} (pcscope search PROFILE mech: "
                             f"lists them)")
        pc = mechanism.anchor
    view = store.asm_around(pc, args.before, args.after)
    record = store.alp(pc)
    mechanisms = workload.mechanisms.ids_at(pc)
    data = {
        "pc": hex_pc(pc),
        "function": view.function,
        "window": view.window,
        "instructions": [i.to_json() for i in view.instructions],
        "alp": record.to_json(rounded=True) if record is not None else None,
        "mechanisms": mechanisms,
    }
    if args.json:
        print_json(data)
        return 0
    if mechanism_id is not None:
        print(describe(workload.mechanisms.get(mechanism_id)))
        print()
    print(f"{data['function'] or '(no function)'}  {view.window}"
          + (f"  in {', '.join(data['mechanisms'])}" if mechanisms else ""))
    for ins in view.instructions:
        mark = ">" if ins.pc == pc else " "
        badges = f"  [{', '.join(ins.patterns)}]" if ins.patterns else ""
        print(f"{mark} {hex_pc(ins.pc):>14}  {ins.samples:>12,}  {ins.share:7.3%}  "
              f"{ins.asm}{badges}")
    if record is not None:
        print(f"ALP {hex_pc(pc)}: {data['alp']}")
    return 0
