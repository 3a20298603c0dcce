"""Blocks of a raw ALP decoded to columns in the usual case, in a second process.

Decoding (msgspec's parse and taking the records into numpy columns) is about half of a
read, and it needs nothing the reader learns from earlier blocks; the rules between records
and the per-PC sums do. So a forked worker reads, splits and decodes the blocks while the
reader checks and sums the ones before: the two halves run on two cores (a bare polars
NDJSON read uses both as well). A block travels as its bytes plus numpy columns; the pipe
holds at most a block or two, so memory does not grow with the file.

polars' NDJSON reader, the other native decoder at hand, was measured against msgspec on
the same blocks: about 2.5 times the CPU for the same columns, ~70 MB more peak, and laxer
(a null reads as absent, a number in a text field as its text), so it is not used.
"""

from __future__ import annotations

import multiprocessing
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from operator import attrgetter
from typing import Any, cast

import numpy as np

from pcscope.core.errors import InputError, PcscopeError
from pcscope.core.ids import parse_pc
from pcscope.core.readers.alp_records import RecordColumns, decode_block
from pcscope.core.textio import LineBlock, open_line_blocks

_MAX_PC = 2**64 - 1
_PC_OF = attrgetter("pc")
_LOOP_OF = attrgetter("loop")
APART_FROM_BYTES = 1 << 20    # a smaller file is decoded in the reader's process: a fork
                              # costs more than the overlap gains on a few blocks
_PC_TEXT = re.compile(r"0[xX][0-9a-fA-F]+|[0-9]+")
_USUAL_PCS = re.compile(r"(?:0x[0-9a-f]{1,16}\n)*0x[0-9a-f]{1,16}")  # 64 bits at most


def pc_value(spelt: str | int) -> int:
    """A PC as spelt in the file: a JSON integer, ``0x``-hex (any case) or decimal."""
    if isinstance(spelt, int):  # msgspec gives str | int: never a bool
        value = spelt
    elif _PC_TEXT.fullmatch(spelt):
        value = int(spelt, 16) if spelt[1:2] in ("x", "X") else int(spelt)
    else:
        value = parse_pc(spelt)    # the same rules, with ids' wording for the error
    if value > _MAX_PC:
        raise ValueError(f"pc {spelt!r} does not fit in 64 bits")
    return value


def _pc_values(spellings: list[str | int]) -> np.ndarray:
    """The value of each PC as spelt (uint64); ValueError at the first that is not a
    64-bit PC."""
    texts = cast(list[str], spellings)  # unless a JSON integer makes join raise
    try:  # the usual spelling, checked for the whole block by one regex pass
        usual = _USUAL_PCS.fullmatch("\n".join(texts)) is not None
    except TypeError:  # a PC spelt as a JSON integer
        usual = False
    return np.array([int(s, 16) for s in texts] if usual else list(map(pc_value, spellings)),
                    dtype=np.uint64)


@dataclass(frozen=True, slots=True)
class DecodedBlock:
    """A block's records as columns: their figures, the value of each PC, and their loop
    labels as the distinct ones (in order of first appearance) and each record's index
    into them."""

    cols: RecordColumns
    pcs: np.ndarray           # uint64
    loop_names: list[str | None]
    loop_codes: np.ndarray    # int64


def decoded_block(block: LineBlock) -> DecodedBlock | None:
    """The usual case, with no Python step per line: every line a valid record with
    canonical stage names and no CR. None when some line is not (it then goes line by
    line)."""
    if b"\r" in block.data:
        return None
    recs = decode_block(block.data, len(block))
    if recs is None:
        return None
    cols = RecordColumns.of(recs)
    if cols.broken():
        return None
    try:
        values = _pc_values(list(map(_PC_OF, recs)))
    except ValueError:
        return None
    names = list(map(_LOOP_OF, recs))
    code = {name: i for i, name in enumerate(dict.fromkeys(names))}
    return DecodedBlock(cols, values, list(code),
                        np.fromiter(map(code.__getitem__, names), np.int64, count=len(recs)))


def _send_blocks(path: str, size: int, out: Connection) -> None:
    """The worker: each block with decoded_block's result, then None; what stopped the
    file early (a truncated gzip, an unreadable file) in its place."""
    with out:
        try:
            try:
                for block in open_line_blocks(path, size):
                    out.send((block, decoded_block(block)))
                end: object = None
            except InputError as exc:   # pickling would not give back its arguments
                end = ("input error", exc.path, exc.line, exc.what)
            except OSError as exc:
                end = exc
            out.send(end)
        except (BrokenPipeError, ConnectionResetError):
            pass                        # the reader stopped early: nobody to tell


def decoded_blocks(path: str | os.PathLike, size: int) -> Iterator[tuple[LineBlock,
                                                                       DecodedBlock | None]]:
    """open_line_blocks(path, size), each block with decoded_block's result: made ahead in
    a forked process for a file of several blocks (fork: nothing to import again; the
    worker touches nothing but the file and its own memory), here for a small one."""
    try:
        small = os.path.getsize(path) < APART_FROM_BYTES
    except OSError:
        small = True    # open_line_blocks says what is wrong with the file
    if small:
        for block in open_line_blocks(path, size):
            yield block, decoded_block(block)
        return
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    worker = context.Process(target=_send_blocks, args=(str(path), size, send), daemon=True)
    worker.start()
    send.close()
    try:
        while (item := _received(receive, worker, path)) is not None:
            if isinstance(item, OSError):
                raise item
            if item[0] == "input error":
                raise InputError(*item[1:])
            yield item
    finally:
        receive.close()
        worker.kill()    # done, or the reader stopped early (an error): no more blocks
        worker.join()


def _received(receive: Connection, worker: multiprocessing.process.BaseProcess,
              path: str | os.PathLike) -> Any:
    """The worker's next item; a worker that died without saying so (killed, out of
    memory) is an error naming the file, not an EOFError from the pipe."""
    try:
        return receive.recv()
    except EOFError:
        worker.join(timeout=1)
        raise PcscopeError(f"{os.fspath(path)}: the process decoding the ALP stopped "
                           f"(exit code {worker.exitcode}) before the end of the file") from None
