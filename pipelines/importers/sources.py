"""Streaming readers of source files: JSON Lines, JSON (an array is streamed item by item) and Parquet.

Public datasets ship as multi-gigabyte files, so nothing here loads a whole file: JSONL is read line by
line, a JSON array is decoded one item at a time from a growing buffer, Parquet batch by batch. A row that
cannot be decoded becomes a ``Row`` with an ``error`` so the caller can reject it and go on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pyarrow.parquet as pq

from pipelines.importers.base import BAD_VALUE, EPISODE_NOT_CONTIGUOUS, INVALID_JSON, Bad, SourceRecord

CHUNK = 1 << 20


@dataclass
class Row:
    location: str
    data: Any = None
    error: Bad | None = None


def iter_rows(path: Path) -> Iterator[Row]:
    """Rows of a ``.jsonl``/``.ndjson``, ``.json`` or ``.parquet`` file."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        yield from _parquet_rows(path)
    elif suffix in (".jsonl", ".ndjson"):
        yield from _jsonl_rows(path)
    elif suffix == ".json":
        yield from _json_rows(path)
    else:
        raise ValueError(f"{path}: unsupported source file type {suffix!r} (use .jsonl, .json or .parquet)")


def _jsonl_rows(path: Path) -> Iterator[Row]:
    with path.open("rb") as f:
        for n, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            loc = f"{path.name}:{n}"
            try:
                yield Row(loc, json.loads(raw.decode("utf-8")))
            except UnicodeDecodeError as exc:
                yield Row(loc, raw[:200].decode("utf-8", "replace"), Bad(INVALID_JSON, f"{loc}: invalid UTF-8: {exc}"))
            except json.JSONDecodeError as exc:
                yield Row(loc, raw[:200].decode("utf-8", "replace"), Bad(INVALID_JSON, f"{loc}: {exc.msg}"))


def _json_rows(path: Path) -> Iterator[Row]:
    with path.open("r", encoding="utf-8", errors="strict") as f:
        head = f.read(CHUNK)
        stripped = head.lstrip()
        if stripped.startswith("["):
            yield from _json_array_items(f, stripped[1:], path.name)
            return
        rest = f.read()
    try:
        yield Row(f"{path.name}:1", json.loads(head + rest))
    except json.JSONDecodeError as exc:
        yield Row(f"{path.name}:1", None, Bad(INVALID_JSON, f"{path.name}: {exc.msg} at char {exc.pos}"))


def _json_array_items(f: TextIO, buf: str, name: str) -> Iterator[Row]:
    """Decode the items of a top-level JSON array one at a time (``raw_decode`` on a refilled buffer)."""
    decoder = json.JSONDecoder()
    n, eof = 0, False
    while True:
        buf = buf.lstrip().lstrip(",").lstrip()
        if not buf and not eof:
            more = f.read(CHUNK)
            eof = not more
            buf += more
            continue
        if buf.startswith("]"):
            return
        if not buf and eof:
            yield Row(f"{name}:{n + 1}", None, Bad(INVALID_JSON, f"{name}: array is not closed"))
            return
        try:
            item, end = decoder.raw_decode(buf)
        except json.JSONDecodeError as exc:
            if eof:
                yield Row(f"{name}:{n + 1}", buf[:200], Bad(INVALID_JSON, f"{name} item {n + 1}: {exc.msg}"))
                return
            more = f.read(max(CHUNK, len(buf)))  # grow geometrically so big items stay linear
            eof = not more
            buf += more
            continue
        n += 1
        yield Row(f"{name}:{n}", item)
        buf = buf[end:]


def _parquet_rows(path: Path, batch_size: int = 64) -> Iterator[Row]:
    pf = pq.ParquetFile(path)
    n = 0
    for batch in pf.iter_batches(batch_size=batch_size):
        for row in batch.to_pylist():
            n += 1
            yield Row(f"{path.name}:row {n}", row)


def single_records(path: Path, key_of: Callable[[dict[str, Any]], Any]) -> Iterator[SourceRecord]:
    """One source record per row (episode-per-row formats)."""
    for row in iter_rows(path):
        if row.error is not None:
            yield SourceRecord(row.location, row.location, row.data, row.error)
            continue
        key = key_of(row.data) if isinstance(row.data, dict) else None
        yield SourceRecord(str(key) if key not in (None, "") else row.location, row.location, row.data)


def grouped_records(
    path: Path, key_of: Callable[[dict[str, Any]], Any], keyless_alone: bool = False
) -> Iterator[SourceRecord]:
    """Consecutive rows with the same key form one source record (step-per-row formats).

    Sources write an episode's steps together, so only the current group is held in memory. A key that comes
    back after other keys is not merged across the gap (that would need the whole file): the later run is
    rejected as ``episode_not_contiguous`` while the first run is imported. A row without a key is rejected,
    or, with ``keyless_alone``, forms a record of its own (keyed by its location).
    """
    done: set[str] = set()
    current: str | None = None
    rows: list[Any] = []
    first_loc = ""

    def flush() -> Iterator[SourceRecord]:
        if current is None:
            return
        if current in done:
            err = Bad(EPISODE_NOT_CONTIGUOUS, f"{first_loc}: rows of {current!r} reappear after other episodes")
            yield SourceRecord(current, first_loc, rows, err)
        else:
            yield SourceRecord(current, first_loc, rows)
        done.add(current)

    for row in iter_rows(path):
        if row.error is not None:
            yield SourceRecord(row.location, row.location, row.data, row.error)
            continue
        key = key_of(row.data) if isinstance(row.data, dict) else None
        if key in (None, "") and keyless_alone:
            key = row.location
        elif key in (None, ""):
            yield SourceRecord(row.location, row.location, row.data,
                               Bad(BAD_VALUE, f"{row.location}: row has no episode id"))
            continue
        key = str(key)
        if key != current:
            yield from flush()
            current, rows, first_loc = key, [], row.location
        rows.append(row.data)
    yield from flush()
