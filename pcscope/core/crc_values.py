"""Which form a table-driven CRC computes, carried typed with its mechanism.

pcscope.core.table_crc tells a reflected CRC (the low byte indexes the table, the CRC
shifts right) from an MSB-first one. The mechanism's check says which for the reader; the
advice picks its remedy from here, so no sentence is read back to decide it.
"""

from __future__ import annotations

import msgspec


class CrcValues(msgspec.Struct, frozen=True, tag="crc"):
    """Whether the CRC is reflected (crc32* computes it directly) or MSB-first."""

    reflected: bool
