"""Reading one split: its records parsed into ``SourceRecord``s, or just their raw text (for reject payloads).

JSON Lines go through ``schemas.recordio.parse_jsonl_line`` (the same rules as every other reader); Parquet rows
are parsed here so a bad row keeps its content as JSON text: a refused record must be fixable and re-feedable,
not just counted. Every record comes with its key (``plan.record_key``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from filters.item import SourceRecord
from pipelines.curation.plan import LINE_MASK, UNREADABLE, Split, record_key
from schemas.jsonlines import MAX_LINE_BYTES, LongLine, read_line
from schemas.jsontext import iter_array, printable_json, valid_text
from schemas.recordio import Parsed, file_error, iter_jsonl, long_line_error, parse_data, parse_jsonl_line
from schemas.trajectory import Trajectory


class _Lines:
    """(line number, raw bytes) of every line of a JSON Lines split.

    An iterator object rather than a generator so that it keeps no reference to the line it returned: a
    generator's frame would hold a 35 MB line (a 10,000-step trajectory) for as long as its record is being
    described, on top of the parsed record."""

    def __init__(self, split: Split):
        self.f = open(split.path, "rb")  # noqa: SIM115 (closed at the end of the range, or when collected)
        self.f.seek(split.start)
        self.n, self.end = split.first_line, split.end
        # The offset is counted from the lines read rather than asked of the file: ``tell()`` is a system call
        # per record, and a call that releases the GIL waits for it again behind any busy thread.
        self.pos = split.start

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> tuple[int, bytes | LongLine]:
        if self.f.closed or self.pos >= self.end:
            self.f.close()
            raise StopIteration
        raw = read_line(self.f, MAX_LINE_BYTES)  # (bounded: a record is at most MAX_LINE_BYTES of text)
        if not raw:
            self.f.close()
            raise StopIteration
        self.pos = self.pos + len(raw) if isinstance(raw, bytes) else self.f.tell()
        self.n += 1
        return self.n - 1, raw

    def __del__(self) -> None:
        f = getattr(self, "f", None)  # (absent when the file could not be opened)
        if f is not None:
            f.close()


def _lines(split: Split) -> _Lines:
    return _Lines(split)


def _parquet_rows(split: Split) -> Iterator[tuple[int, dict]]:
    """(row number, row) of a Parquet split (rows before the split are skipped batch by batch)."""
    pf = pq.ParquetFile(split.path)
    row = 0
    for batch in pf.iter_batches(batch_size=128):
        if row + batch.num_rows <= split.start:
            row += batch.num_rows
            continue
        for r in batch.to_pylist():
            if split.start <= row < split.end:
                yield row + 1, r
            row += 1
        if row >= split.end:
            return


def _source(split: Split, parsed: Parsed) -> SourceRecord:
    src = f"{Path(split.path).name}:{parsed.line}"
    if parsed.ok:
        rec = parsed.record
        return SourceRecord(src, record=rec if isinstance(rec, Trajectory) else None)
    return SourceRecord(src, errors=tuple(parsed.errors), raw=parsed.raw.rstrip("\n"))


def _records(split: Split) -> Iterator[tuple[int, SourceRecord]]:
    fi = split.file_index
    if split.format == "json":
        for parsed in iter_jsonl(split.path, "trajectory"):
            yield record_key(fi, parsed.line), _source(split, parsed)
    elif split.format == "parquet":
        for n, row in _parquet_rows(split):
            src = f"{Path(split.path).name}:{n}"
            parsed = parse_data(row, "trajectory", n)  # (a validator bug on one row costs that row only)
            if parsed.ok:
                rec = parsed.record
                yield record_key(fi, n), SourceRecord(src, record=rec if isinstance(rec, Trajectory) else None)
            else:
                yield record_key(fi, n), SourceRecord(src, errors=tuple(parsed.errors), raw=printable_json(row))
    else:
        for n, raw in _lines(split):
            if isinstance(raw, LongLine):
                yield record_key(fi, n), _source(split, long_line_error(split.path, raw, n))
                continue
            line = parse_jsonl_line(raw, n, "trajectory")
            del raw  # (the record is described while this generator waits: it must not hold the text too)
            if line is not None:
                yield record_key(fi, n), _source(split, line)


def read_split(split: Split) -> Iterator[tuple[int, SourceRecord]]:
    """Every record of the split, valid or not. A file that could not be planned is one record whose error names
    it; one that stops being readable part-way (an I/O error, a damaged row group) adds one such record for the
    rest of the split, after the records read before the failure."""
    fi = split.file_index
    if split.format == UNREADABLE:
        yield record_key(fi, split.first_line), _source(split, file_error(split.path, split.error, split.first_line))
        return
    last = split.first_line - 1
    try:
        for key, src in _records(split):
            last = key & LINE_MASK
            yield key, src
    except (OSError, ValueError, pa.ArrowException) as exc:
        n = last + 1
        if n <= split.last_line:  # (a failure after the split's last record costs nothing of it)
            why = f"{type(exc).__name__}: {exc}" if n == split.first_line else f"records from {n} on: {exc}"
            yield record_key(fi, n), _source(split, file_error(split.path, why, n))


def raw_texts(split: Split, keys: set[int]) -> dict[int, str]:
    """The input text of the split's records named by ``keys`` (the payload of their reject rows). A record that
    cannot be read again (the file became unreadable) gets no payload; its reject names the file."""
    out: dict[int, str] = {}
    if not keys or split.format == UNREADABLE:
        return out
    fi = split.file_index
    try:
        if split.format == "jsonl":
            for n, raw in _lines(split):
                k = record_key(fi, n)
                if k in keys and not isinstance(raw, LongLine):  # (a too-long line keeps no payload)
                    out[k] = valid_text(raw.decode("utf-8", "replace").rstrip("\n"))
        elif split.format == "parquet":
            for n, row in _parquet_rows(split):
                k = record_key(fi, n)
                if k in keys:
                    out[k] = printable_json(row)
        else:
            with open(split.path, "rb") as f:
                for item in iter_array(f):
                    k = record_key(fi, item.index)
                    if k in keys:
                        out[k] = valid_text(item.raw) if item.raw else printable_json(item.value)
    except (OSError, ValueError, pa.ArrowException):
        pass
    return out
