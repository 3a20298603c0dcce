"""The typed values a mechanism carries (pcscope.core.mechanisms.Mechanism.values), told
apart by their tag: msgspec's ``type`` field in the stored table and in the tools' data.

They are msgspec Structs (a union of several types decodes only as tagged Structs), so this
module loads msgspec: pcscope.core.mechanisms names it only through the package, and what
decodes a mechanism imports it first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from pcscope.core.chase_values import ChaseValues
from pcscope.core.crc_values import CrcValues
from pcscope.core.dispatch_state_values import DispatchStateValues
from pcscope.core.fixed_trip_values import FixedTripValues
from pcscope.core.gather_values import GatherValues
from pcscope.core.hand_written_values import HandWrittenValues
from pcscope.core.lookup_values import LookupValues
from pcscope.core.memory_values import MemoryValues
from pcscope.core.nest_values import NestValues
from pcscope.core.plt_values import PltValues
from pcscope.core.recomputed_values import RecomputedValues
from pcscope.core.relaxation_values import RelaxationValues
from pcscope.core.tree_values import TreeValues

Values = (TreeValues | ChaseValues | MemoryValues | GatherValues | LookupValues | PltValues
          | RelaxationValues | FixedTripValues | RecomputedValues | NestValues
          | DispatchStateValues | HandWrittenValues | CrcValues)
V = TypeVar("V", TreeValues, ChaseValues, MemoryValues, GatherValues, LookupValues, PltValues,
            RelaxationValues, FixedTripValues, RecomputedValues, NestValues, DispatchStateValues,
            HandWrittenValues, CrcValues)


def value_of(values: Sequence[Values], of: type[V]) -> V | None:
    """The value of type ``of`` among ``values`` (None: the mechanism carries none)."""
    return next((v for v in values if isinstance(v, of)), None)


def with_value(values: Sequence[Values], new: Values) -> tuple[Values, ...]:
    """``values`` with ``new`` in place of the value of its type (added last when none)."""
    if not any(type(v) is type(new) for v in values):
        return (*values, new)
    return tuple(new if type(v) is type(new) else v for v in values)
