"""The spool: each split's candidate rows, written once while the split is read, read back by its writer.

Why: the keep / drop verdicts are only known after the dedupe shuffles, but the rows are built (flattened,
redacted, difficulty attached) while the records are in hand. Rather than carry whole records through the
shuffles — which is what made memory grow with the dataset — the reader writes the split's rows, screenshots
excluded, to ``<staging>/_spool/<split>.arrow`` (Arrow IPC, one batch per ``row_group_rows`` rows) and sends on
only facts; the split's writer later streams the file batch by batch, keeps the rows the verdicts keep and
attaches the screenshots. A retried bundle rewrites the same file (temp name + rename), so retries are safe.
The directory must be visible to every worker, like the staging directory itself; it is removed before
publishing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from schemas.arrow import SAMPLE_SCHEMA
from schemas.fileio import StagedFile

SPOOL_DIR = "_spool"
KEY, PII = "_key", "_pii"
BOX = pa.list_(pa.float64(), 4)
SPOOL_SCHEMA = pa.schema([*(f for f in SAMPLE_SCHEMA if f.name != "image"),
                          pa.field(KEY, pa.int64(), nullable=False), pa.field(PII, pa.list_(BOX))])


def spool_path(staging: str, split_name: str) -> Path:
    return Path(staging) / SPOOL_DIR / f"{split_name}.arrow"


class SpoolWriter:
    """Rows (dicts shaped for ``SPOOL_SCHEMA``) → one Arrow IPC file, ``batch_rows`` rows per record batch."""

    def __init__(self, path: Path, batch_rows: int):
        self.path, self.batch_rows = path, batch_rows
        # Not fsynced: the run's own scratch file, rebuilt by a rerun.
        self.staged = StagedFile(path, durable=False)
        self.sink = pa.OSFile(str(self.staged.tmp), "wb")
        self.writer = pa.ipc.new_file(self.sink, SPOOL_SCHEMA)
        self.rows: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.batch_rows:
            self._flush()

    def _flush(self) -> None:
        if self.rows:
            self.writer.write_batch(pa.RecordBatch.from_pylist(self.rows, schema=SPOOL_SCHEMA))
            self.rows = []

    def close(self) -> None:
        self._flush()
        self.writer.close()
        self.sink.close()
        self.staged.commit()

    def abort(self) -> None:
        self.writer.close()
        self.sink.close()
        self.staged.abort()


def read_spool(path: Path) -> Iterator[pa.RecordBatch]:
    """The spooled batches of one split, memory-mapped (nothing if the split had no flattenable record)."""
    if not path.exists():
        return
    with pa.memory_map(str(path), "r") as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)
