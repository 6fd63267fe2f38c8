"""Reading and writing record files: JSON Lines and Parquet, streaming, bad records reported not fatal.

Readers yield one ``Parsed`` per input record: either the validated record or its errors. A bad line never
stops the rest of the file from being read. Writers write to a temporary name and rename, so a crash never
leaves a half-written file under the final name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.arrow import kind_of, to_table
from schemas.base import Record
from schemas.errors import FieldError, RecordValidationError
from schemas.fileio import atomic_open, atomic_path
from schemas.records import KINDS, parse_record


@dataclass
class Parsed:
    """One input record: ``record`` when it validated, else ``errors`` (and the raw text, to keep it)."""

    line: int
    record: Record | None = None
    errors: list[FieldError] = field(default_factory=list)
    raw: str = ""

    @property
    def ok(self) -> bool:
        return self.record is not None


def _parse(data: object, kind: str | None, line: int, raw: str) -> Parsed:
    try:
        return Parsed(line, record=parse_record(data, kind, line))
    except RecordValidationError as exc:
        return Parsed(line, errors=exc.errors, raw=raw)


def iter_jsonl(path: str | os.PathLike[str], kind: str | None = None) -> Iterator[Parsed]:
    """Records from a JSON Lines file (a ``.json`` file holding one array is accepted too)."""
    p = Path(path)
    if p.suffix == ".json":
        with p.open("rb") as f:
            head = f.read(1)
        if head == b"[":
            yield from _iter_json_array(p, kind)
            return
    with p.open("rb") as f:
        for n, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            label = f"<line {n}>"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                msg = f"invalid UTF-8 at byte {exc.start} of the line"
                yield Parsed(n, errors=[FieldError(label, "<line>", msg, n)], raw=raw.decode("utf-8", "replace"))
                continue
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                yield Parsed(n, errors=[FieldError(label, "<line>", f"invalid JSON: {exc.msg}", n)], raw=text)
                continue
            yield _parse(data, kind, n, text)


def _iter_json_array(path: Path, kind: str | None) -> Iterator[Parsed]:
    try:
        items = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        yield Parsed(1, errors=[FieldError("<file>", "<file>", f"unreadable JSON array: {exc}", 1)])
        return
    for n, data in enumerate(items, start=1):
        yield _parse(data, kind, n, json.dumps(data, ensure_ascii=False, default=str))


def iter_parquet(path: str | os.PathLike[str], kind: str | None = None, batch_size: int = 256) -> Iterator[Parsed]:
    """Records from a Parquet file, batch by batch (never the whole file in memory)."""
    pf = pq.ParquetFile(path)
    kind = kind or kind_of(pf.schema_arrow)
    n = 0
    for batch in pf.iter_batches(batch_size=batch_size):
        for row in batch.to_pylist():
            n += 1
            yield _parse(row, kind, n, "")


def iter_records(path: str | os.PathLike[str], kind: str | None = None) -> Iterator[Parsed]:
    """Records from any supported file, by extension."""
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        return iter_parquet(path, kind)
    if suffix in (".jsonl", ".json", ".ndjson"):
        return iter_jsonl(path, kind)
    raise ValueError(f"{path}: unsupported file type {suffix!r} (use .jsonl, .json or .parquet)")


def write_parquet(records: Iterable[Record], path: str | os.PathLike[str], kind: str) -> int:
    """Write records of one kind to a Parquet file atomically (``schemas.fileio``); returns the row count."""
    schema: pa.Schema = KINDS[kind].arrow
    rows = list(records)
    table = to_table(rows, schema)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")
    return len(rows)


def write_jsonl(records: Iterable[Record], path: str | os.PathLike[str]) -> int:
    """Write records as JSON Lines atomically; returns the count."""
    n = 0
    with atomic_open(path, "w") as f:
        for r in records:
            f.write(r.model_dump_json() + "\n")
            n += 1
    return n
