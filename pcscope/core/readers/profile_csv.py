"""Profile CSV/TSV reader (docs/formats.md §1): polars parses, numpy derives windows and weights.

Every problem is reported as ``InputError(file, line, what)``, the line being the physical
line where the record starts. Polars rows map to records one to one (blank lines become
all-null rows, which are skipped), so row ``i`` is line ``i + 2`` unless a quoted cell spans
lines; then the lines are counted again with the csv module.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import polars as pl

from pcscope.core.asmtext import by_first_row, distinct_rows
from pcscope.core.columns import StringColumn
from pcscope.core.errors import InputError
from pcscope.core.profile import Profile, function_state, window_state
from pcscope.core.textio import decode_utf8, open_text_lines, read_bytes

REQUIRED = ("pc", "samples", "asm")
MAX_SUM = 2**63 - 1  # counts and their sums must fit int64
KNOWN = ("pc", "samples", "asm", "function", "window", "module", "cycles")
_LABELS = ("function", "module", "window")  # read as Categorical codes (_encode)
WINDOW_GAP = 64  # bytes between PCs that start a new derived window

Progress = Callable[[str], None]


def delimiter_for(path: str | os.PathLike, header: str) -> str:
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith(".csv"):
        return ","
    if name.endswith(".tsv"):
        return "\t"
    return "\t" if header.count("\t") > header.count(",") else ","


def read_profile(
    path: str | os.PathLike, *, merge_duplicates: bool = False, progress: Progress | None = None
) -> Profile:
    path = str(path)
    say = progress or (lambda _msg: None)
    say("reading")
    header_line = next((text for _, text in open_text_lines(path)), "").removeprefix("\ufeff")
    if not header_line.strip():
        raise InputError(path, 1, "missing header row (want at least pc, samples, asm)")
    sep = delimiter_for(path, header_line)
    names = _header(path, header_line, sep)
    say("parsing")
    return _build(path, sep, _parse(path, sep, names), names, merge_duplicates, say)


def _header(path: str, header_line: str, sep: str) -> list[str]:
    if "\x00" in header_line:
        raise InputError(path, 1, "NUL byte in the header (binary data?)")
    names = [n.strip().lower() for n in next(csv.reader([header_line], delimiter=sep))]
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        raise InputError(
            path, 1, f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"(header has: {', '.join(names)})"
        )
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise InputError(path, 1, f"column {n!r} appears twice in the header")
        seen.add(n)
    return names


def _scan(path: str, sep: str, names: list[str]) -> pl.LazyFrame:
    """The file's rows as polars reads them, numbered from 2 (the line, unless a quoted cell
    spans lines); a blank line is an all-null row, dropped here (its number is not used)."""
    blank = pl.all_horizontal([pl.col(c).is_null() for c in names])
    return pl.scan_csv(
        path, separator=sep, has_header=True, new_columns=names, infer_schema=False,
        quote_char='"',
    ).with_row_index("_row", offset=2).filter(~blank)


def _collect(path: str, query: pl.LazyFrame, sep: str, width: int) -> pl.DataFrame:
    """Run a query over the file in polars' streaming engine (the raw text columns are
    never held whole); when polars cannot parse the file it is read again in Python, to
    name the line and what is wrong."""
    try:
        return query.collect(engine="streaming")
    except (pl.exceptions.PolarsError, OSError) as exc:  # OSError: a damaged gzip stream
        _record_lines(path, sep, width)
        raise InputError(path, None, f"cannot parse as CSV: {str(exc).splitlines()[0]}") from None


def _parse(path: str, sep: str, names: list[str]) -> pl.DataFrame:
    """One streaming pass: every derived column at once (numbers read the fast way; see
    _columns), the columns outside KNOWN kept as text."""
    query = _scan(path, sep, names).select(_columns(names))
    cols = _collect(path, query, sep, len(names))
    if not len(cols):
        raise InputError(path, None, "no instructions: the file has a header and no rows")
    return cols


def _record_lines(path: str, sep: str, width: int) -> np.ndarray:
    """The physical line where each record after the header starts, read with the csv
    module; a malformed record (too many fields, an open quote) is an InputError at its
    first line."""
    data = read_bytes(path)
    decode_utf8(path, data)
    reader = csv.reader(io.StringIO(data.decode("utf-8-sig"), newline=""), delimiter=sep,
                        strict=True)
    starts = []
    start = 1
    try:
        for record in reader:
            if start > 1 and len(record) > width:
                raise InputError(path, start, f"{len(record)} fields, header has {width}")
            starts.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise InputError(path, start, f"malformed CSV record ({exc}: an unclosed quote?)") \
            from None
    return np.array(starts[1:], dtype=np.int64)


def _cleaned(labels: pl.Series) -> pl.Series:
    """Stripped text, with empty cells as null."""
    s = labels.str.strip_chars()
    return s.set(s == "", None)


def _mnemonics(texts: pl.Series, codes: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Each row's mnemonic code in the sorted mnemonics, which follow, from the distinct
    asm texts and each row's number among them. A mnemonic is a stripped text's first word,
    lower-cased, read once per distinct text (a Categorical of each row's first word in the
    parse cost ~0.13 s CPU at 1M rows)."""
    words = texts.str.extract(r"^(\S*)").str.to_lowercase()
    mnemonics = sorted(words.unique().drop_nulls().to_list())  # code-point order = polars'
    per_text = words.cast(pl.Enum(mnemonics)).to_physical().cast(pl.Int32).fill_null(-1)
    return np.take(per_text.to_numpy(), codes), mnemonics


def _encode(labels: pl.Series, present: pl.Series,
            clean: Callable[[pl.Series], pl.Series]) -> tuple[np.ndarray, list[str]]:
    """Dictionary encoding of a Categorical column of raw labels: int32 codes in the sorted
    order of the cleaned labels (-1 for null, or a label cleaned to null) and those labels.
    The parse made the column Categorical (4 bytes a row rather than a 16-byte string view)
    and ``clean`` runs here on the distinct labels only, not on every row; labels that clean
    to the same text share a code. ``present``: its distinct labels (no null)."""
    cleaned = clean(present.cast(pl.String)).to_list()
    names = sorted({c for c in cleaned if c is not None})  # code-point order = polars'
    index = {name: i for i, name in enumerate(names)}
    physical = present.to_physical().to_numpy().astype(np.int64)
    renumber = np.full(int(physical.max(initial=-1)) + 2, -1, dtype=np.int32)  # last: null
    renumber[physical] = [index.get(c, -1) for c in cleaned]
    codes = labels.to_physical()
    if codes.null_count():  # filled only then: a filled copy is 4 MB at 1M rows
        codes = codes.fill_null(len(renumber) - 1)
    return np.take(renumber, codes.to_numpy()), names  # np.take: see patterns._flags


def _absent(rows: int) -> tuple[np.ndarray, list[str]]:
    """The codes of a label column the file lacks: -1 on every row, no labels."""
    return np.full(rows, -1, dtype=np.int32), []


def _pc_expr(fast: bool) -> pl.Expr:
    """PC text to UInt64. The fast form reads canonical ``0x…`` only; the full form also takes
    surrounding spaces, ``0X`` and decimal, and costs several times more on a million rows."""
    if fast:
        pc = pl.col("pc")
        # slice, not strip_prefix: the prefix is known to be there (~0.05 s CPU at 1M rows)
        return pl.when(pc.str.starts_with("0x")).then(
            pc.str.slice(2).str.to_integer(base=16, dtype=pl.UInt64, strict=False)
        )
    pc = pl.col("pc").str.strip_chars().str.to_lowercase()
    is_hex = pc.str.starts_with("0x")
    return (
        pl.when(is_hex & (pc.str.len_chars() > 2))
        .then(pc.str.strip_prefix("0x").str.to_integer(base=16, dtype=pl.UInt64, strict=False))
        .when(is_hex)
        .then(None)
        .otherwise(pc.str.to_integer(base=10, dtype=pl.UInt64, strict=False))
    )


def _count_expr(col: str, fast: bool) -> pl.Expr:
    text = pl.col(col) if fast else pl.col(col).str.strip_chars()
    return text.str.to_integer(base=10, dtype=pl.Int64, strict=False)


def _numeric(names: list[str]) -> list[str]:
    return ["pc", "samples"] + (["cycles"] if "cycles" in names else [])


def _columns(names: list[str]) -> list[pl.Expr]:
    """Every derived column, so polars runs them in one pass. Numbers are read the fast way
    (see _slow_numbers for cells that fail); labels are kept raw as Categorical and cleaned
    per distinct label (_encode)."""
    exprs = [
        pl.col("_row"),
        _pc_expr(fast=True).alias("pc_value"),
        _count_expr("samples", fast=True).alias("samples_value"),
        # Its mnemonic is read per distinct text (_mnemonics).
        pl.col("asm").str.strip_chars().alias("asm_text"),
    ]
    if "cycles" in names:
        exprs.append(_count_expr("cycles", fast=True).alias("cycles_value"))
    # A label column the file lacks is not made (_build codes its rows -1 without a column
    # of nulls to encode: ~0.03 s at 1M rows)
    exprs += [pl.col(col).cast(pl.Categorical).alias(f"{col}_text")
              for col in _LABELS if col in names]
    exprs += [pl.col(c).fill_null("").alias(f"extra.{c}") for c in names if c not in KNOWN]
    # A number read the fast way holds no newline; the cells of a column that failed it are
    # looked at only then (_lines). The raw asm is searched once for a newline or a NUL
    # (_check's test; a pass of its own cost ~0.05 s CPU at 1M rows): both are rare, and
    # which one it was is asked only when one is there (_lines, _check). A label's newline
    # is looked for in its distinct labels (_lines; ~0.05 s CPU less at 1M rows).
    extras = [c for c in names if c not in KNOWN]
    exprs += [pl.col("asm").str.contains("[\x00\n]").alias("_odd_asm"),
              pl.any_horizontal([pl.lit(False), *(pl.col(c).str.contains("\n", literal=True)
                                                  for c in extras)]).alias("_multiline")]
    return exprs


def _lines(path: str, sep: str, names: list[str], cols: pl.DataFrame,
           failed: list[str], labels: dict[str, pl.Series]) -> np.ndarray:
    """Each row's physical line, uint32 as stored: its number, unless a quoted cell spans
    lines somewhere in the file (then every record's first line is counted again with the
    csv module). ``failed``: the numeric columns some cell of which failed the fast read
    (only those can hold a newline; the parse looked at the extra columns, ``labels`` are
    the distinct labels of each label column; asm is read again when it holds a newline or
    a NUL)."""
    rows = cols["_row"].to_numpy()
    look = failed + (["asm"] if cols["_odd_asm"].any() else [])
    multiline = cols["_multiline"].any() or any(
        label.cast(pl.String).str.contains("\n", literal=True).any()
        for label in labels.values())
    if not multiline and not (look and _newline_in(path, sep, names, look)):
        return rows
    return _record_lines(path, sep, len(names))[rows.astype(np.int64) - 2].astype(np.uint32)


def _newline_in(path: str, sep: str, names: list[str], columns: list[str]) -> bool:
    return _any_row(path, sep, names, pl.any_horizontal(
        [pl.col(c).str.contains("\n", literal=True) for c in columns]))


def _cycles_given(path: str, sep: str, names: list[str]) -> bool:
    """Whether some cycles cell holds more than spaces: read again, only when no cell read
    as a number (a test in the parse itself cost ~0.03 s CPU at 1M rows)."""
    return _any_row(path, sep, names, pl.col("cycles").str.strip_chars().fill_null("") != "")


def _any_row(path: str, sep: str, names: list[str], test: pl.Expr) -> bool:
    """Whether ``test`` holds in some row: the file read again, for a question asked rarely."""
    query = _scan(path, sep, names).select(test.any())
    return bool(_collect(path, query, sep, len(names)).item())


def _slow_numbers(path: str, sep: str, names: list[str], cols: pl.DataFrame) -> pl.DataFrame:
    """Only when a number failed the fast read: the failing columns read again the tolerant
    way (spaces, ``0X``, decimal PCs), in a second pass over the file."""
    numeric = [c for c in _numeric(names) if f"{c}_value" in cols.columns]
    slow = [c for c in numeric if cols[f"{c}_value"].null_count()]
    if not slow:
        return cols
    redo = {"pc": _pc_expr(fast=False)} | {c: _count_expr(c, fast=False) for c in numeric[1:]}
    query = _scan(path, sep, names).select([redo[c].alias(f"{c}_value") for c in slow])
    again = _collect(path, query, sep, len(names))
    return cols.with_columns(again)


def _raw_row(path: str, sep: str, names: list[str], row: int) -> dict:
    """One row's cells as the file spells them (for an error message)."""
    query = _scan(path, sep, names).filter(pl.col("_row") == row)
    return _collect(path, query, sep, len(names)).row(0, named=True)


def _check(path: str, sep: str, names: list[str], cols: pl.DataFrame,
           lines: np.ndarray) -> None:
    """The first bad cell in file order, as an InputError naming its line."""
    asm = cols["asm_text"]
    checks: list[tuple[pl.Series, Callable[[dict], str]]] = [
        (cols["pc_value"].is_null(), lambda r: f"bad pc {r['pc']!r} (want 0x-hex or decimal)"
         if r["pc"] not in (None, "") else "pc is empty"),
        (cols["samples_value"].is_null(), lambda r: f"samples {r['samples']!r} is not a whole "
         "number" if r["samples"] not in (None, "") else "samples is empty"),
        (cols["samples_value"] < 0, lambda r: f"negative samples {r['samples'].strip()}"),
        (asm.is_null() | (asm == ""), lambda r: "asm is empty"),
    ]
    if cols["_odd_asm"].any():  # only then can a row hold a NUL (the parse looked once)
        checks.append((asm.str.contains("\x00", literal=True),
                       lambda r: "NUL byte in asm (binary data?)"))
    if "cycles_value" in cols.columns:
        checks += [
            (cols["cycles_value"].is_null(), lambda r: f"cycles {r['cycles']!r} is not a whole "
             "number" if r["cycles"] not in (None, "") else "cycles is empty"),
            (cols["cycles_value"] < 0, lambda r: f"negative cycles {r['cycles'].strip()}"),
        ]
    first = None
    for bad, what in checks:
        hits = bad.fill_null(False).arg_true()
        if len(hits) and (first is None or hits[0] < first[0]):
            first = (int(hits[0]), what)
    if first is not None:
        idx, what = first
        raise InputError(path, int(lines[idx]),
                         what(_raw_row(path, sep, names, int(cols["_row"][idx]))))


def _build(
    path: str, sep: str, cols: pl.DataFrame, names: list[str], merge: bool, say: Progress
) -> Profile:
    with ThreadPoolExecutor(1) as pool:
        # The asm texts are numbered as read (polars work that lets go of the GIL) while
        # the rows are checked and put in order and the labels encoded here, then the text
        # columns are put in order and joined while the mnemonics are read here. Leaving
        # the block waits for the worker, and its error is raised by result() as it was.
        asm = cols["asm_text"]
        numbered = pool.submit(distinct_rows, asm)
        say("validating")
        failed = [c for c in _numeric(names) if cols[f"{c}_value"].null_count()]
        if "cycles_value" in cols.columns and not cols["cycles_value"].is_not_null().any() \
                and not _cycles_given(path, sep, names):
            cols = cols.drop("cycles_value")  # an all-empty column counts as absent
        cols = _slow_numbers(path, sep, names, cols)
        present = {c: cols[f"{c}_text"].unique().drop_nulls() for c in _LABELS
                   if f"{c}_text" in cols.columns}  # for the newline test and the encoding
        lines = _lines(path, sep, names, cols, failed, present)
        _check(path, sep, names, cols, lines)
        say("indexing")
        # The labels and the text taken out of the frame, so that each number column goes as
        # it is put in PC order.
        labels = {c: cols.drop_in_place(f"{c}_text") for c in _LABELS
                  if f"{c}_text" in cols}
        text = cols.select(["asm_text"] + [c for c in cols.columns if c.startswith("extra.")])
        pcs = cols["pc_value"].to_numpy()
        read = len(pcs)  # rows as read, which the label codes follow until ``picked``
        rows = lines  # each row's line, kept in step with the rows below
        samples = cols["samples_value"].to_numpy()
        cycles = cols["cycles_value"].to_numpy() if "cycles_value" in cols.columns else None
        del cols
        picked = None  # the rows read, in their final order (None: as read)
        if len(pcs) > 1 and not bool(np.all(pcs[1:] > pcs[:-1])):
            picked = np.argsort(pcs, kind="stable")
            # One column at a time: each original goes before the next copy is made.
            pcs = pcs[picked]
            rows = rows[picked]
            samples = samples[picked]
            cycles = cycles[picked] if cycles is not None else None
        dup = np.flatnonzero(pcs[1:] == pcs[:-1])
        if len(dup) and not merge:
            a, b = sorted((int(rows[dup[0]]), int(rows[dup[0] + 1])))
            raise InputError(
                path, b, f"duplicate pc 0x{int(pcs[dup[0]]):x} (also on line {a}); "
                "use --merge-duplicates to sum them"
            )
        _check_sum(path, "samples", samples, rows)
        if cycles is not None:
            _check_sum(path, "cycles", cycles, rows)
        if len(dup):
            keep, samples, cycles = _merge(pcs, samples, cycles)
            pcs, rows = pcs[keep], rows[keep]
            picked = keep if picked is None else picked[keep]
        texts = pool.submit(_text_columns, text, picked)
        del text
        (function, function_names), (module, modules), (window_label, window_labels) = (
            _encode(labels.pop(c), present[c], _cleaned) if c in labels else _absent(read)
            for c in _LABELS)
        if picked is not None:
            function, module = function[picked], module[picked]
            window_label = window_label[picked]
        # The windows need no asm: they are derived while the worker still numbers it.
        window, label_code = _windows(pcs, function, module, window_label)
        first, asm_code = numbered.result()
        del numbered  # it holds the codes as read, 4 MB at 1M rows, until the peak below
        # Here, while the worker joins the text columns (its next task).
        mnemonic, mnemonics = _mnemonics(asm.gather(first), asm_code)
        del asm, first
        if picked is not None:
            mnemonic = mnemonic[picked]
            _, asm_code = by_first_row(asm_code[picked])
            del picked
        # The window and function tables too, while the worker still joins the text.
        value = cycles if cycles is not None else samples
        windows = window_state(window, len(label_code), function, module, value)
        functions = function_state(function, len(function_names), value)
        asm_column, extras = texts.result()
        return Profile(
            path=path,
            pc=pcs,
            samples=samples,
            cycles=cycles,
            asm_column=asm_column,
            asm_code=asm_code,
            mnemonic=mnemonic,
            mnemonics=mnemonics,
            function=function,
            function_names=function_names,
            window=window,
            window_labels=window_labels,
            window_label_code=label_code,
            module=module,
            modules=modules,
            line=rows,
            extras=extras,
            window_state=windows,
            function_state=functions,
        )


def _text_columns(text: pl.DataFrame, picked: np.ndarray | None) -> tuple[
        StringColumn, dict[str, StringColumn]]:
    """The asm column and the extra columns (named without their prefix), each of the rows
    ``picked`` in that order (None: every row as read)."""
    extras = {c.removeprefix("extra."): _strings(text[c], picked) for c in text.columns[1:]}
    return _strings(text.drop_in_place("asm_text"), picked), extras


def _check_sum(path: str, what: str, counts: np.ndarray, lines: np.ndarray) -> None:
    """Counts (non-negative int64) whose sum would not fit int64 are refused at the line
    where the running sum, in file order, passes the limit."""
    if float(counts.sum(dtype=np.float64)) < 2.0**62:   # far from the limit: no exact sum
        return
    order = np.argsort(lines, kind="stable")
    running = 0
    for count, line in zip(counts[order].tolist(), lines[order].tolist(), strict=True):
        running += count
        if running > MAX_SUM:
            raise InputError(path, int(line), f"the sum of {what} passes 2^63-1 here "
                             "(counts must add up to a 64-bit total)")


def _strings(series: pl.Series, picked: np.ndarray | None) -> StringColumn:
    """The texts of the rows ``picked``, in that order (None: every row as read), as one
    UTF-8 blob. They are gathered and joined a slice of rows at a time into it: a gather of
    every row, then a join, held the text four times at once (as read, gathered, polars'
    joined string, Python's bytes), the build's peak memory."""
    lengths = series.str.len_bytes().to_numpy()
    if picked is not None:
        lengths = lengths[picked]
    offsets = np.zeros(len(lengths) + 1, dtype=np.uint64)
    np.cumsum(lengths, out=offsets[1:])
    blob = np.empty(int(offsets[-1]), dtype=np.uint8)
    for lo in range(0, len(lengths), _JOIN_ROWS):
        part = series.slice(lo, _JOIN_ROWS) if picked is None \
            else series.gather(picked[lo : lo + _JOIN_ROWS])
        joined = part.str.join("").cast(pl.Binary).item() or b""
        start = int(offsets[lo])
        blob[start : start + len(joined)] = np.frombuffer(joined, dtype=np.uint8)
    return StringColumn(blob, offsets)


_JOIN_ROWS = 1 << 17


def _merge(pcs, samples, cycles):
    """--merge-duplicates: sum counts per PC; the first row keeps its text fields."""
    starts = np.flatnonzero(np.concatenate(([True], pcs[1:] != pcs[:-1])))
    summed = np.add.reduceat(samples, starts)
    summed_cycles = np.add.reduceat(cycles, starts) if cycles is not None else None
    return starts, summed, summed_cycles


def _windows(
    pcs: np.ndarray, function: np.ndarray, module: np.ndarray, label: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Window code per row (rows in ascending PC) and each window's label code (-1 = derived).

    Labelled rows form one window per label. Unlabelled rows are derived per module: sorted
    by PC, a new window starts where the function label changes or the PC gap exceeds 64.
    """
    n = len(pcs)
    labelled = label >= 0
    if not labelled.any() and _modules_in_runs(module):
        # Every module in one run of PCs (the usual case): (module, pc) order is PC order
        # in blocks, so the windows are runs of rows, numbered in row order.
        brk = np.ones(n, dtype=bool)
        brk[1:] = ((module[1:] != module[:-1]) | (function[1:] != function[:-1])
                   | ((pcs[1:] - pcs[:-1]) > WINDOW_GAP))
        window = np.cumsum(brk, dtype=np.int32) - 1
        return window, np.full(int(window[-1]) + 1 if n else 0, -1, dtype=np.int32)
    key = np.full(n, -1, dtype=np.int64)  # first row of each row's window
    if labelled.any():
        lab_rows = np.flatnonzero(labelled)
        # first row (lowest pc) of each label, since rows are in ascending pc
        first_of_label = np.full(int(label.max()) + 1, n, dtype=np.int64)
        np.minimum.at(first_of_label, label[lab_rows], lab_rows)
        key[lab_rows] = first_of_label[label[lab_rows]]
    free = np.flatnonzero(~labelled)
    if len(free):
        # Rows are in ascending PC already, so a stable sort by module orders by (module, pc).
        order = free[np.argsort(module[free], kind="stable")]
        del free
        # A break where the module or function changes or the PC gap exceeds the limit;
        # one column at a time, so at most one gathered copy is alive (the peak of a build).
        brk = np.zeros(len(order), dtype=bool)
        brk[0] = True
        for column in (module, function):
            ordered = column[order]
            brk[1:] |= ordered[1:] != ordered[:-1]
        ordered = pcs[order]
        brk[1:] |= (ordered[1:] - ordered[:-1]) > WINDOW_GAP
        del ordered
        key[order] = order[np.flatnonzero(brk)][np.cumsum(brk) - 1]
        del order, brk
    # Windows are numbered by their first PC (their first row, rows being in PC order), so
    # numbering is independent of row order.
    is_first = np.zeros(n, dtype=bool)
    is_first[key] = True
    firsts = np.flatnonzero(is_first)
    number = np.cumsum(is_first) - 1
    window = number[key]
    label_code = np.where(labelled[firsts], label[firsts], -1).astype(np.int32)
    return window.astype(np.int32), label_code


def _modules_in_runs(module: np.ndarray) -> bool:
    """Whether the rows of each module code (-1 included) are one run in row order."""
    if not len(module):
        return True
    runs = 1 + int(np.count_nonzero(module[1:] != module[:-1]))
    return runs == int(np.count_nonzero(np.bincount(module.astype(np.int64) + 1)))
