"""Old vs new instruction readings on every distinct asm text of some profiles.

A change to how pcscope.core.isa / pcscope.core.shapes read instruction text is meant to be
output-identical; this checks it on real text rather than on the unit tests' examples:

    python -m bench.readings_identity dump new.pickle PROFILE...        # this checkout
    PYTHONPATH=/tmp/old python -m bench.readings_identity dump old.pickle PROFILE...
    python -m bench.readings_identity compare old.pickle new.pickle

(``/tmp/old`` holds the older code: ``git archive <commit> pcscope | tar -x -C /tmp/old``.)
A reading is every field of ``shapes.Op.of(pc, text)`` plus ``isa.canonical(text)``.
"""

from __future__ import annotations

import dataclasses
import pickle
import sys
from pathlib import Path

PC = 0x10_0000  # a PC for the relative branch targets


def readings(profiles: list[str]) -> dict[str, tuple]:
    from pcscope.core import isa, shapes
    from pcscope.core.readers.profile_csv import read_profile

    texts: set[str] = set()
    for path in profiles:
        texts.update(read_profile(path).asm_column.to_list())
    return {t: (dataclasses.astuple(shapes.Op.of(PC, t)), isa.canonical(t)) for t in texts}


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "dump":
        found = readings(argv[2:])
        Path(argv[1]).write_bytes(pickle.dumps(found))
        print(f"{len(found):,} distinct texts read")
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        old, new = (pickle.loads(Path(p).read_bytes()) for p in argv[1:])
        if old.keys() != new.keys():
            print("the two dumps read different texts")
            return 1
        differ = [t for t in old if old[t] != new[t]]
        for t in differ[:20]:
            print(f"{t!r}:\n  old {old[t]}\n  new {new[t]}")
        print(f"{len(old):,} texts, {len(differ):,} read differently")
        return 1 if differ else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
