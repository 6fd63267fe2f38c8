"""Label export: the audit trail (or each annotator's latest verdicts) as JSON Lines, CSV or Parquet.

Exports are for people and tools outside trajforge (agreement studies, Label Studio / Argilla comparisons,
training a judge on human verdicts); the human gate reads the database directly. CSV cells that a spreadsheet
would run as formulas are escaped; JSON Lines and Parquet keep every text exactly.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from datetime import UTC
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from review.labels import LabelView, iter_labels, latest_by_annotator
from schemas.fileio import atomic_path

FORMATS = ("jsonl", "csv", "parquet")
FIELDS = [f for f in LabelView.__dataclass_fields__]
_TYPES = {"id": pa.int64(), "adjudication": pa.bool_(), "created_at": pa.timestamp("us", tz="UTC")}
LABEL_SCHEMA = pa.schema([pa.field(n, _TYPES.get(n, pa.string())) for n in FIELDS])


# A spreadsheet treats a cell starting with one of these as a formula (``=HYPERLINK(…)``, ``@SUM(…)``, DDE
# via ``+``/``-``, and tab / carriage return before them). Comments and edits are annotator- and crawl-controlled
# text, so such a cell gets a leading apostrophe: shown literally, never evaluated (the OWASP recipe).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def csv_cell(value: object) -> object:
    """``value`` safe for a CSV that a spreadsheet may open: text that could start a formula is quoted."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _rows(engine: Engine, latest_only: bool) -> list[dict]:
    with Session(engine) as db:
        labels = list(iter_labels(db))
    if latest_only:
        latest = latest_by_annotator(labels)
        labels = sorted((lab for by in latest.values() for lab in by.values()), key=lambda v: v.id)
    return [asdict(lab) for lab in labels]


def export_labels(engine: Engine, out: str | Path, fmt: str | None = None, latest_only: bool = False) -> int:
    """Write labels to ``out`` atomically (format from ``fmt`` or the extension); returns the row count."""
    out = Path(out)
    fmt = fmt or out.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    rows = _rows(engine, latest_only)
    with atomic_path(out) as tmp:
        if fmt == "parquet":
            for r in rows:
                if r["created_at"] is not None and r["created_at"].tzinfo is None:
                    r["created_at"] = r["created_at"].replace(tzinfo=UTC)
            pq.write_table(pa.Table.from_pylist(rows, schema=LABEL_SCHEMA), tmp)
        elif fmt == "csv":
            with open(tmp, "w", newline="", encoding="utf-8") as f:
                w = csv.DictWriter(f, fieldnames=FIELDS)
                w.writeheader()
                for r in rows:
                    w.writerow({k: csv_cell(v) for k, v in {**r, "created_at": r["created_at"].isoformat()}.items()})
        else:
            with open(tmp, "w", encoding="utf-8") as f:
                for r in rows:
                    f.write(json.dumps({**r, "created_at": r["created_at"].isoformat()}, ensure_ascii=False) + "\n")
    return len(rows)
