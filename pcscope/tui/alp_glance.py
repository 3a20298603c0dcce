"""The ALP at a glance: per-window flags and per-instruction badges, from the ALP columns.

Lists show one figure per row for thousands of rows; building a full ``AlpRecord`` for
each (stages, loops, blocks) would cost more than drawing the row, so these read the
aggregated counts straight from the table's arrays. The ALP pane shows the full record.
"""

from __future__ import annotations

import numpy as np

from pcscope.core.profile import Profile
from pcscope.tui import render

# Per-window flags (bits): any record, a branch that mispredicts, a memory op that misses.
ALP_ANY, ALP_MISPREDICT, ALP_MISS = 1, 2, 4
# Display threshold for the flags (a glance aid, not a judgement: the analysis decides).
FLAG_RATE = 0.05


class AlpGlance:
    def __init__(self, alp) -> None:
        # The ALP module (and its codec) loads with the ALP, after the first frame.
        from pcscope.core.alp import MEM_COUNTS, row_of

        self.columns = alp.records.columns  # the aggregated ALP's own arrays
        self._row_of = row_of
        self._accesses, self._l1d = MEM_COUNTS.index("accesses"), MEM_COUNTS.index("l1d_miss")

    def badge(self, pc: int) -> str | None:
        """The figure most worth a glance — mispredict rate, else L1D miss rate — or
        ``A`` (other ALP evidence); None without a record."""
        row = self._row_of(self.columns.pcs, pc)
        if row is None:
            return None
        executed, _taken, mispredicted = (int(x) for x in self.columns.branch[row])
        if executed > 0 and mispredicted >= 0:
            return f"mp {render.rate(mispredicted / executed)}"
        mem = self.columns.mem
        accesses, l1d = int(mem[row, self._accesses]), int(mem[row, self._l1d])
        if accesses > 0 and l1d >= 0:
            return f"l1 {render.rate(l1d / accesses)}"
        return "A"

    def window_bits(self, profile: Profile) -> np.ndarray:
        """Flags per window (uint8): OR of its instructions' flags."""
        bits = np.zeros(len(profile.windows), dtype=np.uint8)
        pcs = self.columns.pcs
        if not len(pcs) or not len(profile):
            return bits
        rows = np.minimum(np.searchsorted(profile.pc, pcs), len(profile) - 1)
        matched = profile.pc[rows] == pcs
        np.bitwise_or.at(bits, profile.window[rows[matched]], self._row_bits()[matched])
        return bits

    def _row_bits(self) -> np.ndarray:
        """Flags per ALP row; absent counts are negative and never set a flag."""
        c = self.columns
        executed, mispredicted = c.branch[:, 0], c.branch[:, 2]
        accesses, l1d = c.mem[:, self._accesses], c.mem[:, self._l1d]
        mispredicts = (executed > 0) & (mispredicted >= 0) & (mispredicted >= FLAG_RATE * executed)
        misses = (accesses > 0) & (l1d >= 0) & (l1d >= FLAG_RATE * accesses)
        bits = np.full(len(c.pcs), ALP_ANY, dtype=np.uint8)
        bits[mispredicts] |= ALP_MISPREDICT
        bits[misses] |= ALP_MISS
        return bits


def alp_flags(bits: int) -> str:
    """``A`` has ALP evidence, ``M`` a branch mispredicts, ``$`` a memory op misses."""
    if not bits:
        return ""
    return "A" + ("M" if bits & ALP_MISPREDICT else "") + ("$" if bits & ALP_MISS else "")
