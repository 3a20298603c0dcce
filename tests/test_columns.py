"""StringColumn: texts as one UTF-8 blob plus offsets."""

import numpy as np

from pcscope.core import columns
from pcscope.core.columns import StringColumn


def test_take_gathers_any_rows_in_the_order_asked(monkeypatch):
    texts = ["ldr x0, [x1]", "", "add x0, x0, #1", "b.ne 0x10", "ret", "µop"]
    column = StringColumn.from_strings(texts)
    rows = np.array([5, 0, 0, 3, 1, 2, 4], dtype=np.int64)
    expected = [texts[r] for r in rows]
    assert column.take(rows).to_list() == expected
    monkeypatch.setattr(columns, "_TAKE_ROWS", 2)  # several slices, one ending on an empty row
    assert column.take(rows).to_list() == expected
    assert column.take(np.zeros(0, dtype=np.int64)).to_list() == []
