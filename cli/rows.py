"""Rows as the commands print them, a batch at a time: `table` for people (numbers rounded, long cells cut; an
answer from the warehouse shows at most TABLE_ROWS_SHOWN rows, the first and the last, with a line saying how many
there are, as DuckDB's own CLI does), `csv` and `json` for programs (exact values, every row). Whatever the size
of the answer, what is held at once is one batch (and, for a table, the rows it shows). A listing already in hand
(print_rows: `status --limit N`, `llm models`) shows every row it was asked for.

An answer read from the warehouse is spooled (spool_answer): written out a batch at a time to a temporary file
in the query's own folder, bounded by the query's spill limit, while the connection is open; printed from there
once it is closed, so a slow reader of the output never holds the warehouse."""
from __future__ import annotations

import codecs
import collections
import csv
import datetime as dt
import decimal
import io
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Sequence

from caseforge.cli.common import CommandError
from caseforge.stage_report import table_cell

TABLE_ROWS_SHOWN = 40            # a longer answer shows its first and last TABLE_ROWS_SHOWN // 2 rows
SPOOL_IN_MEMORY = 1 << 20        # an answer's first MiB stays in memory; a longer one goes to the spool file
COPY_CHUNK = 1 << 16


def jsonable(value):
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    return value


def for_people(value) -> str:
    """A value as a table shows it: floats rounded (two decimals, four significant digits below 1), times to the
    second, counters as k=v, NULL for none."""
    if value is None:
        return "NULL"
    if isinstance(value, float):
        if value == 0 or not math.isfinite(value):
            return f"{value:g}"
        return f"{value:.2f}" if abs(value) >= 1 else f"{value:.4g}"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items()))
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=jsonable)
    return str(jsonable(value))


def _csv_cell(value):
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=jsonable)
    return jsonable(value)


class _Lines:
    """A file to csv.writer that keeps what it writes in `lines` (io.StringIO holds four bytes a character)."""

    def __init__(self, lines: list[str]):
        self.write = lines.append


class _CsvRows:
    def __init__(self, columns: Sequence[str], out):
        self.out = out
        csv.writer(out).writerow(columns)

    def write(self, rows: Sequence[Sequence]) -> None:
        lines: list[str] = []                    # one write per batch, not per row
        csv.writer(_Lines(lines)).writerows([_csv_cell(v) for v in row] for row in rows)
        self.out.write("".join(lines))

    def close(self) -> None:
        pass


class _JsonRows:
    """One JSON array of row objects, written a row object at a time; the same text as json.dump(rows, indent=1)."""

    def __init__(self, columns: Sequence[str], out):
        self.columns, self.out, self.rows = list(columns), out, 0

    def write(self, rows: Sequence[Sequence]) -> None:
        if not rows:
            return
        parts = []
        for row in rows:
            text = json.dumps({c: jsonable(v) for c, v in zip(self.columns, row)}, ensure_ascii=False,
                              default=jsonable, indent=1)
            parts.append(" " + text.replace("\n", "\n "))
        self.out.write(("[\n" if self.rows == 0 else ",\n") + ",\n".join(parts))
        self.rows += len(rows)

    def close(self) -> None:
        self.out.write("\n]\n" if self.rows else "[]\n")


class _TableRows:
    """The first and the last `shown` // 2 rows of an answer (every row when `shown` is None), and how many it
    has: drawn at close."""

    def __init__(self, columns: Sequence[str], out, shown: int | None = TABLE_ROWS_SHOWN):
        self.columns, self.out, self.rows = list(columns), out, 0
        self.head_size = shown // 2 if shown is not None else None
        self.head: list[list[str]] = []
        self.tail: collections.deque = collections.deque(maxlen=shown - shown // 2 if shown is not None else 0)

    def write(self, rows: Sequence[Sequence]) -> None:
        for row in rows:
            if self.head_size is None or len(self.head) < self.head_size:
                self.head.append(self._cells(row))
            else:
                self.tail.append(row)            # drawn at close: most rows of a long answer never are
            self.rows += 1

    @staticmethod
    def _cells(row: Sequence) -> list[str]:
        cells = [for_people(v).replace("\n", " ") for v in row]
        return [table_cell(c) for c in cells]

    def close(self) -> None:
        tail = [self._cells(row) for row in self.tail]
        shown = self.head + tail
        widths = [max([len(c)] + [len(r[i]) for r in shown]) for i, c in enumerate(self.columns)]
        out = self.out
        out.write(" | ".join(c.ljust(w) for c, w in zip(self.columns, widths)) + "\n")
        out.write("-+-".join("-" * w for w in widths) + "\n")
        for row in self.head:
            out.write(" | ".join(c.ljust(w) for c, w in zip(row, widths)) + "\n")
        if self.rows > len(shown):
            out.write(" | ".join("…".ljust(w) for w in widths) + "\n")
        for row in tail:
            out.write(" | ".join(c.ljust(w) for c, w in zip(row, widths)) + "\n")
        plural = "s" if self.rows != 1 else ""
        if self.rows > len(shown):
            out.write(f"({self.rows:,} rows, {len(shown)} shown: the first {len(self.head)} and the last {len(tail)}; "
                      "--format csv or json gives every row)\n")
        else:
            out.write(f"({self.rows} row{plural})\n")


def write_rows(columns: Sequence[str], batches: Iterable[Sequence[Sequence]], fmt: str, out=None,
               table_rows: int | None = TABLE_ROWS_SHOWN) -> None:
    """Write the rows of `batches` (each a sequence of rows) to `out` (default stdout) in `fmt`, batch by batch; a
    table shows `table_rows` of them (None: all)."""
    out = out or sys.stdout
    writer = _TableRows(columns, out, table_rows) if fmt == "table" else {"csv": _CsvRows, "json": _JsonRows}[fmt](
        columns, out)
    for batch in batches:
        writer.write(batch)
    writer.close()


def print_rows(columns: Sequence[str], rows: Sequence[Sequence], fmt: str, out=None) -> None:
    """Rows already in hand (a listing as long as asked for: `status --limit`, `llm models`), every one of them
    printed, as write_rows prints batches."""
    write_rows(columns, [rows], fmt, out, table_rows=None)


class AnswerTooLarge(CommandError):
    """An answer larger than the query's spill limit (CASEFORGE_QUERY_TEMP_LIMIT): exit 2, like a query stopped
    at its other bounds."""


class _Spool:
    """Text written as UTF-8 to a temporary file (its first SPOOL_IN_MEMORY bytes in memory) that has no name in
    `folder`: removing the folder (the query's connection does, when closed) leaves it readable until closed."""

    def __init__(self, folder: Path, limit_bytes: int, limit_text: str):
        self.file = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY, dir=folder)
        self.size, self.limit_bytes, self.limit_text = 0, limit_bytes, limit_text

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        self.size += len(data)
        if self.size > self.limit_bytes:
            raise AnswerTooLarge([f"query stopped: the answer is larger than its temporary limit of {self.limit_text} "
                                 "(CASEFORGE_QUERY_TEMP_LIMIT): ask for fewer rows or columns (LIMIT, WHERE)"])
        self.file.write(data)

    def copy_to(self, out) -> None:
        self.file.seek(0)
        decoder = codecs.getincrementaldecoder("utf-8")()
        while chunk := self.file.read(COPY_CHUNK):
            out.write(decoder.decode(chunk))
        out.write(decoder.decode(b"", final=True))

    def close(self) -> None:
        self.file.close()


class SpooledAnswer:
    """An answer written while the query's connection was open, to print once it is closed (print_to)."""

    def __init__(self, spool: _Spool | None, table: io.StringIO | None):
        self._spool, self._table = spool, table

    def print_to(self, out=None) -> None:
        out = out or sys.stdout
        try:
            if self._spool is not None:
                self._spool.copy_to(out)
            else:
                out.write(self._table.getvalue())
        finally:
            self.close()

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()


def spool_answer(columns: Sequence[str], batches: Iterable[Sequence[Sequence]], fmt: str, folder: Path,
                 limit_bytes: int, limit_text: str) -> SpooledAnswer:
    """`batches` written in `fmt` now, to print later: csv and json to a spool file in `folder` (AnswerTooLarge
    past `limit_bytes`), a table (bounded: TABLE_ROWS_SHOWN rows) in memory."""
    if fmt == "table":
        text = io.StringIO()
        write_rows(columns, batches, fmt, text)
        return SpooledAnswer(None, text)
    spool = _Spool(folder, limit_bytes, limit_text)
    try:
        write_rows(columns, batches, fmt, spool)
    except BaseException:
        spool.close()
        raise
    return SpooledAnswer(spool, None)


def spool_query_answer(con, cursor, fmt: str, each_batch: Callable[[list[tuple]], list] | None = None
                       ) -> SpooledAnswer:
    """The answer of the statement `cursor` just ran on `con` (caseforge.warehouse.query's QueryConnection),
    fetched and written a batch at a time into the query's own folder (each batch through `each_batch` first,
    when given): print it (print_to) once `con` is closed."""
    columns = [d[0] for d in cursor.description]
    batches = con.fetch_batches(cursor)
    if each_batch is not None:
        batches = map(each_batch, batches)
    return spool_answer(columns, batches, fmt, con.spool_folder, con.spool_limit_bytes, con.bounds.temp_limit)
